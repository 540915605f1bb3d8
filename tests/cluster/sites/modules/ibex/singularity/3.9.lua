-- Site-emulation stub (tests/cluster/sites) for KAUST Ibex's "singularity" module. It puts a
-- stub singularity on PATH that runs the command directly on the host, without a container.
local site = os.getenv("DDP_SITE_DIR") or ""
if site == "" then
  LmodError("singularity/3.9 is a slurm-ddp site-emulation stub: it works only inside an " ..
            "emulated site cluster (tests/cluster/cluster.sh up --site NAME)")
end
whatis("Site-emulation stub: singularity that runs commands without a container")
prepend_path("PATH", pathJoin(site, "stubs/singularity/bin"))
if mode() == "load" then
  LmodMessage("singularity/3.9: site-emulation stub: commands run directly on the host, no container")
end

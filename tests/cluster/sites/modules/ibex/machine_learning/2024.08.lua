-- Site-emulation stub (tests/cluster/sites) for KAUST Ibex's "machine_learning" module (a
-- conda stack with PyTorch). This one puts the local Debian python3-torch 1.13 (CPU only) first
-- on PATH and says so when loaded.
local site = os.getenv("DDP_SITE_DIR") or ""
if site == "" then
  LmodError("machine_learning/2024.08 is a slurm-ddp site-emulation stub: it works only " ..
            "inside an emulated site cluster (tests/cluster/cluster.sh up --site NAME)")
end
whatis("Site-emulation stub: local Debian python3-torch 1.13 (CPU), not KAUST's ML stack")
prepend_path("PATH", pathJoin(site, "stubs/pytorch/bin"))
setenv("DDP_SITE_STUB_PYTORCH", "1.13")
if mode() == "load" then
  LmodMessage("machine_learning/2024.08: site-emulation stub: local /usr/bin/python3 with Debian torch 1.13, CPU only")
end

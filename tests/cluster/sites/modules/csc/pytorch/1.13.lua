-- Site-emulation stub (tests/cluster/sites) for CSC's "pytorch" module (Puhti, Mahti). CSC's
-- module runs PyTorch 2.x inside Apptainer; this one puts the local Debian python3-torch 1.13
-- (CPU only) first on PATH and says so when loaded.
local site = os.getenv("DDP_SITE_DIR") or ""
if site == "" then
  LmodError("pytorch/1.13 is a slurm-ddp site-emulation stub: it works only inside an emulated " ..
            "site cluster (tests/cluster/cluster.sh up --site NAME)")
end
whatis("Site-emulation stub: local Debian python3-torch 1.13 (CPU), not CSC's Apptainer PyTorch")
prepend_path("PATH", pathJoin(site, "stubs/pytorch/bin"))
setenv("DDP_SITE_STUB_PYTORCH", "1.13")
if mode() == "load" then
  LmodMessage("pytorch/1.13: site-emulation stub: local /usr/bin/python3 with Debian torch 1.13, CPU only")
end

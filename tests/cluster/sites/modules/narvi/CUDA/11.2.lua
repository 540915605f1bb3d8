-- Site-emulation stub (tests/cluster/sites) for Narvi's "CUDA/11.2" module. There is no CUDA
-- here: the module changes nothing but says so when loaded. Python and torch come from the
-- host (Narvi users bring their own conda environment).
local site = os.getenv("DDP_SITE_DIR") or ""
if site == "" then
  LmodError("CUDA/11.2 is a slurm-ddp site-emulation stub: it works only inside an emulated " ..
            "site cluster (tests/cluster/cluster.sh up --site NAME)")
end
whatis("Site-emulation stub: no CUDA on this machine")
setenv("DDP_SITE_STUB_CUDA", "11.2")
if mode() == "load" then
  LmodMessage("CUDA/11.2: site-emulation stub: no CUDA here, nothing is added to the environment")
end

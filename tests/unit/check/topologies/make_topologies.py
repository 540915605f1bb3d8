#!/usr/bin/env python3
"""Writes the hwloc v2 XML topologies the ddp-check tests load (no GPU or NIC needed).

The files are committed; run this only to change them, then read the diff. The layout follows
what `lstopo --of xml` writes on real nodes (hwloc 2.9): packages holding a NUMA node, cores
and PUs, and PCI host bridges whose PCIe switches hold GPUs and NICs with their OS devices.
osdev_type: 1 GPU (NVML), 2 network, 3 OpenFabrics, 5 co-processor (CUDA).
"""
import pathlib

HERE = pathlib.Path(__file__).resolve().parent


class Gen:
    def __init__(self):
        self.gp = 0
        self.lines = []

    def idx(self):
        self.gp += 1
        return self.gp

    def out(self, depth, text):
        self.lines.append("  " * depth + text)


def mask(bits):
    value = 0
    for b in bits:
        value |= 1 << b
    return "0x%08x" % value


def sets(cpus, nodes):
    c, n = mask(cpus), mask(nodes)
    return f'cpuset="{c}" complete_cpuset="{c}" nodeset="{n}" complete_nodeset="{n}"'


def gpu(g, d, bus, n, vendor_dev, model, osdevs):
    g.out(d, f'<object type="PCIDev" gp_index="{g.idx()}" pci_busid="0000:{bus:02x}:00.0" '
             f'pci_type="0302 [{vendor_dev}] [10de:134f] a1" pci_link_speed="31.507692">')
    g.out(d + 1, f'<info name="PCIVendor" value="NVIDIA Corporation"/>')
    g.out(d + 1, f'<info name="PCIDevice" value="{model}"/>')
    for name, subtype, osdev_type in osdevs:
        g.out(d + 1, f'<object type="OSDev" gp_index="{g.idx()}" name="{name}" '
                     f'subtype="{subtype}" osdev_type="{osdev_type}">')
        g.out(d + 2, f'<info name="GPUModel" value="{model}"/>')
        g.out(d + 1, '</object>')
    g.out(d, '</object>')


def nic(g, d, bus, pci_type, osdevs):
    g.out(d, f'<object type="PCIDev" gp_index="{g.idx()}" pci_busid="0000:{bus:02x}:00.0" '
             f'pci_type="{pci_type}" pci_link_speed="31.507692">')
    for name, osdev_type, subtype in osdevs:
        sub = f' subtype="{subtype}"' if subtype else ""
        g.out(d + 1, f'<object type="OSDev" gp_index="{g.idx()}" name="{name}"{sub} '
                     f'osdev_type="{osdev_type}"/>')
    g.out(d, '</object>')


def switch(g, d, bus, last, children):
    g.out(d, f'<object type="Bridge" gp_index="{g.idx()}" bridge_type="1-1" depth="1" '
             f'bridge_pci="0000:[{bus + 1:02x}-{last:02x}]" pci_busid="0000:{bus:02x}:00.0" '
             f'pci_type="0604 [1000:c010] [1000:a064] b0" pci_link_speed="31.507692">')
    children(d + 1)
    g.out(d, '</object>')


def package(g, d, pkg, cpus, io):
    g.out(d, f'<object type="Package" os_index="{pkg}" {sets(cpus, [pkg])} gp_index="{g.idx()}">')
    g.out(d + 1, f'<object type="NUMANode" os_index="{pkg}" {sets(cpus, [pkg])} '
                 f'gp_index="{g.idx()}" local_memory="68719476736"/>')
    for cpu in cpus:
        g.out(d + 1, f'<object type="Core" os_index="{cpu}" {sets([cpu], [pkg])} gp_index="{g.idx()}">')
        g.out(d + 2, f'<object type="PU" os_index="{cpu}" {sets([cpu], [pkg])} gp_index="{g.idx()}"/>')
        g.out(d + 1, '</object>')
    io(d + 1)
    g.out(d, '</object>')


def machine(host, packages, cpus_per_package, io_of_package):
    g = Gen()
    g.out(0, '<?xml version="1.0" encoding="UTF-8"?>')
    g.out(0, '<!DOCTYPE topology SYSTEM "hwloc2.dtd">')
    g.out(0, '<topology version="2.0">')
    all_cpus = list(range(packages * cpus_per_package))
    nodes = list(range(packages))
    g.out(1, f'<object type="Machine" os_index="0" {sets(all_cpus, nodes)} '
             f'allowed_cpuset="{mask(all_cpus)}" allowed_nodeset="{mask(nodes)}" gp_index="{g.idx()}">')
    g.out(2, f'<info name="HostName" value="{host}"/>')
    for p in range(packages):
        cpus = list(range(p * cpus_per_package, (p + 1) * cpus_per_package))
        package(g, 2, p, cpus, lambda d, p=p: io_of_package(g, d, p))
    g.out(1, '</object>')
    g.out(0, '</topology>')
    return "\n".join(g.lines) + "\n"


def host_bridge(g, d, first, last, children):
    g.out(d, f'<object type="Bridge" gp_index="{g.idx()}" bridge_type="0-1" depth="0" '
             f'bridge_pci="0000:[{first:02x}-{last:02x}]">')
    children(d + 1)
    g.out(d, '</object>')


A100 = ("10de:20b0", "NVIDIA A100-SXM4-40GB")
V100 = ("10de:1db4", "Tesla V100-PCIE-16GB")
CX6 = "0207 [15b3:101b] [15b3:0006] 00"  # Mellanox ConnectX-6, InfiniBand
X710 = "0200 [8086:1572] [8086:0000] 01"  # Intel X710, Ethernet
ASPEED = "0300 [1a03:2000] [1a03:2000] 41"  # BMC VGA: a display, not a GPU


def gpu8_ib4():
    """DGX-A100-like: 2 packages, each with 2 PCIe switches of [2 GPUs + 1 ConnectX-6]."""
    def io(g, d, p):
        base = 0x10 + 0x40 * p

        def under_host(d2):
            for s in range(2):
                sw = base + 0x10 * s
                k = 2 * p + s          # switch number 0..3: NIC mlx5_k/ibk, GPUs 2k, 2k+1

                def kids(d3, sw=sw, k=k):
                    for j in range(2):
                        n = 2 * k + j
                        gpu(g, d3, sw + 1 + j, n, A100[0], A100[1],
                            [(f"cuda{n}", "CUDA", 5), (f"nvml{n}", "NVML", 1)])
                    nic(g, d3, sw + 3, CX6, [(f"ib{k}", 2, None), (f"mlx5_{k}", 3, None)])
                switch(g, d2, sw, sw + 0xf, kids)
            if p == 0:
                nic(g, d2, base + 0x30, X710, [("eno1", 2, None)])
                nic(g, d2, base + 0x31, ASPEED, [])
        host_bridge(g, d, base, base + 0x3f, under_host)
    return machine("dgx-a100-01", 2, 8, io)


def v100x4_eth():
    """4 x V100 PCIe on one package, one Ethernet NIC; CUDA OS devices only."""
    def io(g, d, p):
        def under_host(d2):
            def kids(d3):
                for n in range(4):
                    gpu(g, d3, 0x21 + n, n, V100[0], V100[1], [(f"cuda{n}", "CUDA", 5)])
            switch(g, d2, 0x20, 0x2f, kids)
            nic(g, d2, 0x30, X710, [("ens1f0", 2, None)])
        host_bridge(g, d, 0x20, 0x3f, under_host)
    return machine("v100-node", 1, 4, io)


def cpu_only():
    """CPU node: 2 packages, Ethernet eth0 plus Slingshot hsn0 (cxi0), no GPU, a BMC VGA."""
    def io(g, d, p):
        def under_host(d2):
            if p == 0:
                nic(g, d2, 0x01, X710, [("eth0", 2, None)])
                nic(g, d2, 0x02, ASPEED, [])
            else:
                nic(g, d2, 0x81, "0200 [17db:0501] [17db:0000] 02",
                    [("hsn0", 2, None), ("cxi0", 3, None)])
        first = 0x00 if p == 0 else 0x80
        host_bridge(g, d, first, first + 0x7f, under_host)
    return machine("cpu-node", 2, 4, io)


for name, make in [("gpu8-ib4.xml", gpu8_ib4), ("v100x4-eth.xml", v100x4_eth),
                   ("cpu-only.xml", cpu_only)]:
    (HERE / name).write_text(make())

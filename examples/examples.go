package examples

import (
	"embed"
	"fmt"
	"os"
	"path/filepath"
)

// objects holds the compiled programs, so the xnic binary (xnic demo) can run
// them on a machine with neither the sources nor clang.
//
//go:embed xdp/*.o
var objects embed.FS

// Example describes one example object.
type Example struct {
	// Name is the object's base name: xdp/Name.c is the source and
	// xdp/Name.o the compiled object, under this directory.
	Name string
	// Program is the XDP program to run (its C function name). Objects with
	// helper programs (tail-call targets, the cpumap program) list the
	// entry point here.
	Program string
	// Summary says what it does, in one line.
	Summary string
}

// All lists every example, in the order of the docs.
var All = []Example{
	{"xdp_drop_count", "xdp_drop_count", "drop everything, count per IP protocol (percpu_array), like samples/bpf xdp1"},
	{"xdp_macswap_tx", "xdp_macswap_tx", "swap MACs and XDP_TX, count per IP protocol, like xdp2"},
	{"xdp_redirect_map", "xdp_redirect_map", "swap MACs and redirect to devmap tx_port[0]"},
	{"xdp_redirect_cpu", "xdp_redirect_cpu", "redirect to cpumap cpu_map[flow hash % nr_cpus]; xdp_cpumap_count runs on the target"},
	{"xdp_adjust_tail", "xdp_adjust_tail", "answer IPv4 frames over max_pcktsz (400) with ICMP frag-needed (mtu 386), XDP_TX"},
	{"xdp_vlan", "xdp_vlan", "push or pop an 802.1Q tag with adjust_head (vlan_mode, vlan_vid in .data)"},
	{"xdp_ipip", "xdp_ipip", "IP-in-IP encapsulation with adjust_head and bpf_csum_diff, XDP_TX"},
	{"xdp_lpm_acl", "xdp_lpm_acl", "drop IPv4 sources matching the LPM trie acl_v4, count hits"},
	{"xdp_lru_flows", "xdp_lru_flows", "packets and bytes per IPv4 5-tuple in an LRU hash"},
	{"xdp_tailcall", "xdp_tailcall", "dispatch by IP protocol through the prog_array jmp_table"},
	{"xdp_globals", "xdp_globals", "state and configuration in .data, .rodata, .bss and .data.stats"},
	{"xdp_xsk", "xdp_xsk", "redirect to the xskmap entry of the receive queue, else XDP_PASS"},
	{"xdp_reference", "xdp_reference", "the speed reference: parse Ethernet/IPv4/UDP, drop UDP port 9"},
	{"xdp_meta", "xdp_meta", "pad short frames (adjust_tail, store_bytes) and leave 8 bytes of metadata (adjust_meta)"},
	{"xdp_events", "xdp_events", "ring buffer events for TCP SYNs (reserve/submit/discard, bpf_loop) and ICMP (output)"},
	{"xdp_fib_router", "xdp_fib_router", "IPv4 forwarding through bpf_fib_lookup: TTL, MACs, bpf_redirect to the egress port, like xdp_fwd"},
	{"xdp_perf_sample", "xdp_perf_sample", "the first 128 bytes of every frame to a perf event array (bpf_perf_event_output with frame bytes), like xdpdump"},
	{"xdp_mapinmap_acl", "xdp_mapinmap_acl", "per-port source block lists: an array of maps indexed by ingress_ifindex, hash inner maps"},
	{"xdp_spinlock_stats", "xdp_spinlock_stats", "packets, bytes and largest frame per IP protocol, updated together under a bpf_spin_lock"},
	{"xdp_hw_meta", "xdp_hw_meta", "RX timestamp, hash and VLAN from the metadata kfuncs in front of UDP frames to meta_port, redirected to the xskmap"},
}

// Lookup returns the example called name.
func Lookup(name string) (Example, error) {
	for _, e := range All {
		if e.Name == name {
			return e, nil
		}
	}
	return Example{}, fmt.Errorf("examples: no example %q (see examples.All)", name)
}

// Object returns the compiled ELF object of the example called name.
func Object(name string) ([]byte, error) {
	b, err := objects.ReadFile("xdp/" + name + ".o")
	if err != nil {
		return nil, fmt.Errorf("examples: object %q: %w", name, err)
	}
	return b, nil
}

// WriteObject writes the example's object into dir (which must exist) and
// returns its path, for loaders that take a file.
func WriteObject(dir, name string) (string, error) {
	b, err := Object(name)
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".o")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return "", fmt.Errorf("examples: writing %s: %w", path, err)
	}
	return path, nil
}

// Package examples holds xnic's example XDP programs: C sources, compiled
// with clang (-target bpf, libbpf's headers and conventions: BTF-defined maps
// in .maps, globals in .data/.rodata/.bss, SEC("xdp") programs), and their
// objects, committed next to them and embedded in this package ([Object]).
//
// Layout: xdp/NAME.c is the source and xdp/NAME.o the object (a folder of
// its own because Go refuses .c files in a package without cgo);
// xdp/xdp_common.h has the shared bounds-checked parsing helpers. generate.go carries one
// //go:generate line per object (`make generate` rebuilds them all), and
// TestObjectsMatchSources recompiles every source with those lines and
// requires the same programs (instruction by instruction, via cilium/ebpf's
// CollectionSpec) and maps as the committed object.
//
// The programs ([All] lists them):
//
//	xdp_drop_count    XDP_DROP, per-protocol counter in a percpu_array (xdp1)
//	xdp_macswap_tx    MAC swap, XDP_TX, per-protocol counter (xdp2)
//	xdp_redirect_map  MAC swap, bpf_redirect_map(&tx_port, 0, 0) on a devmap
//	xdp_redirect_cpu  bpf_redirect_map on a cpumap, entry from a flow hash;
//	                  xdp_cpumap_count (SEC xdp/cpumap) for the target CPU
//	xdp_adjust_tail   ICMP frag-needed reply for IPv4 frames > max_pcktsz
//	xdp_vlan          802.1Q push/pop with bpf_xdp_adjust_head
//	xdp_ipip          IP-in-IP encapsulation, outer checksum by bpf_csum_diff
//	xdp_lpm_acl       LPM trie on the IPv4 source: drop on match
//	xdp_lru_flows     LRU hash of IPv4 5-tuples: packets and bytes
//	xdp_tailcall      tail calls by IP protocol through a prog_array filled
//	                  statically in the object
//	xdp_globals       .data, .rodata, .bss and a named .data.stats section
//	xdp_xsk           bpf_redirect_map(&xsks, rx_queue_index, XDP_PASS)
//	xdp_reference     the speed reference: Ethernet/IPv4/UDP parse
//	xdp_meta          tail growth, load/store_bytes, get_buff_len and metadata
//	xdp_events        ring buffer events (reserve/submit/discard, output) and
//	                  bpf_loop
//	xdp_fib_router    IPv4 forwarding with bpf_fib_lookup and bpf_redirect
//	                  (xdp_fwd); the FIB is bpf.Collection.SetFIB's
//	xdp_perf_sample   frame samples to a perf event array (xdpdump)
//	xdp_mapinmap_acl  per-port block lists in an array of hash maps
//	xdp_spinlock_stats per-protocol stats updated under a bpf_spin_lock
//	xdp_hw_meta       the XDP metadata kfuncs (rx_timestamp, rx_hash,
//	                  rx_vlan_tag) written before the frame for AF_XDP
//
// The tests prove them against the kernel (root; skipped with a message
// otherwise): diff_test.go runs each program on thousands of random and
// crafted frames with BPF_PROG_TEST_RUN (internal/kernelxdp) and in xnic's
// interpreter (dataplane/bpf) and requires the same verdict, output bytes,
// metadata and map contents; BenchmarkExamples measures every program of
// the package on both sides (xdp_fib_router in a network namespace whose
// routes match an xnic FIB) and reports the ratio, each on a path checked on
// both sides (bench_programs_test.go). xdp_hw_meta is the exception: the
// kernel runs the metadata kfuncs only in device-bound programs, which
// BPF_PROG_TEST_RUN does not take, so dataplane's tests run it against ports
// that report metadata instead, and its benchmark row has xnic's figure
// alone, as does xdp_cpumap_count's (the kernel does not test-run
// SEC xdp/cpumap programs).
package examples

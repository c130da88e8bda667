// Package kernelxdp is xnic's kernel oracle: it loads XDP objects into the
// running Linux kernel with github.com/cilium/ebpf and runs them with
// BPF_PROG_TEST_RUN, so tests can hold xnic's interpreter to the kernel's own
// results (verdict, output bytes, metadata, map contents) and benchmarks can
// compare speeds.
//
// Everything here needs root (CAP_BPF and CAP_NET_ADMIN) and a kernel that
// permits the bpf() syscall. [Available] says whether it does; tests call it
// and skip with its message otherwise. Nothing here is used on a fast path.
//
// What the kernel does, as measured on 6.18 with this package's tests:
//   - Input frames shorter than 14 bytes are refused with EINVAL.
//   - The context's ingress_ifindex must name a real device in the caller's
//     network namespace (or be 0, when the program sees the loopback device,
//     ifindex 1) and rx_queue_index must be below its number of RX queues;
//     egress_ifindex must be 0. [Netns] gives a private namespace with a
//     veth of several queues for other ifindexes and queues.
//   - Metadata in front of the frame is passed in and out as the first
//     xdp_md.data bytes of the data buffer: [Result.Meta] holds it.
//   - A redirect only records its target: the verdict is XDP_REDIRECT and
//     nothing is sent. For bpf_redirect_map to return XDP_REDIRECT the map
//     entry must exist, so devmap entries need real ifindexes (loopback
//     works) and cpumap entries a queue size; an empty entry gives the
//     fallback verdict in the low bits of flags. [OpenXDPSocket] makes an
//     AF_XDP socket for xskmap entries (no rings or binding needed).
//   - Programs meant for devmap or cpumap entries (sections xdp/devmap,
//     xdp/cpumap) cannot be test-run: EINVAL.
//   - A program array empties when the last user-space file descriptor of
//     its map closes: an [Object] keeps the whole collection open until Close.
//
// Benchmarks: [Bench] reports the kernel's BPF_PROG_TEST_RUN time per run
// (the Duration the kernel measures over repeat runs, JIT included),
// [BenchInput] the same with a context (ingress ifindex, queue, metadata)
// and the frame the last run left, and
// [LiveBench] the kernel's real XDP path per frame, with
// BPF_F_TEST_XDP_LIVE_FRAMES on a veth pair in a private network namespace
// (XDP_DROP frames are recycled by the page pool; XDP_TX frames go out of the
// veth into its peer, which drops them with an XDP program of its own).
package kernelxdp

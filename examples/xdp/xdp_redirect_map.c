// SPDX-License-Identifier: MIT
/* xdp_redirect_map forwards every frame to the port stored at key 0 of the
 * devmap tx_port, with its Ethernet addresses swapped, like the kernel's
 * samples/bpf xdp_redirect_map. With no entry at key 0 the helper's fallback
 * (flags 0) makes the verdict XDP_ABORTED. Frames shorter than an Ethernet
 * header are dropped. rxcnt[0] counts the frames forwarded. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 8);
} tx_port SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} rxcnt SEC(".maps");

SEC("xdp")
int xdp_redirect_map(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 key = 0;
	__u64 *cnt;

	if (data + sizeof(struct ethhdr) > data_end)
		return XDP_DROP;
	swap_macs(data);
	cnt = bpf_map_lookup_elem(&rxcnt, &key);
	if (cnt)
		*cnt += 1;
	return bpf_redirect_map(&tx_port, 0, 0);
}

char _license[] SEC("license") = "Dual MIT/GPL";

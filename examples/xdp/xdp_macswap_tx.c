// SPDX-License-Identifier: MIT
/* xdp_macswap_tx sends every frame back out of the port it came in on with
 * its Ethernet addresses swapped, counting per IP protocol like
 * xdp_drop_count, in the spirit of the kernel's samples/bpf xdp2. Frames
 * shorter than an Ethernet header are dropped. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 256);
} rxcnt SEC(".maps");

SEC("xdp")
int xdp_macswap_tx(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 proto = 0;
	__be16 eth_proto;
	__u64 *cnt;

	int off = parse_eth(data, data_end, &eth_proto);
	if (off < 0)
		return XDP_DROP;
	if (eth_proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = data + off;
		if ((void *)(iph + 1) <= data_end)
			proto = iph->protocol;
	} else if (eth_proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6h = data + off;
		if ((void *)(ip6h + 1) <= data_end)
			proto = ip6h->nexthdr;
	}

	cnt = bpf_map_lookup_elem(&rxcnt, &proto);
	if (cnt)
		*cnt += 1;
	swap_macs(data);
	return XDP_TX;
}

char _license[] SEC("license") = "Dual MIT/GPL";

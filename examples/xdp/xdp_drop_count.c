// SPDX-License-Identifier: MIT
/* xdp_drop_count drops every frame and counts it per IP protocol number
 * (IPv4 protocol or IPv6 next header; 0 for anything else or a frame too
 * short to parse), in the spirit of the kernel's samples/bpf xdp1. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 256);
} rxcnt SEC(".maps");

SEC("xdp")
int xdp_drop_count(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 proto = 0;
	__be16 eth_proto;
	__u64 *cnt;

	int off = parse_eth(data, data_end, &eth_proto);
	if (off >= 0) {
		if (eth_proto == bpf_htons(ETH_P_IP)) {
			struct iphdr *iph = data + off;
			if ((void *)(iph + 1) <= data_end)
				proto = iph->protocol;
		} else if (eth_proto == bpf_htons(ETH_P_IPV6)) {
			struct ipv6hdr *ip6h = data + off;
			if ((void *)(ip6h + 1) <= data_end)
				proto = ip6h->nexthdr;
		}
	}

	cnt = bpf_map_lookup_elem(&rxcnt, &proto);
	if (cnt)
		*cnt += 1;
	return XDP_DROP;
}

char _license[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
/* xdp_fib_router forwards IPv4 frames the way samples/bpf xdp_fwd does: it
 * asks the FIB (bpf_fib_lookup) for the next hop of the destination, from the
 * receiving port's point of view with the IP total length checked against the
 * path MTU. On success it decrements the TTL (updating the header checksum
 * incrementally, RFC 1624), writes the next hop's and the egress port's MACs
 * and redirects out of the egress port. Blackhole, unreachable and prohibit
 * routes drop; everything else (no route, local address, no neighbour, frame
 * too big, TTL expiring, not IPv4) goes to the stack with XDP_PASS.
 * fib_results counts lookups by return code (0..9; 10: not looked up). */
#include "xdp_common.h"

#ifndef AF_INET
#define AF_INET 2
#endif

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 11);
} fib_results SEC(".maps");

static __always_inline void count(__u32 rc)
{
	__u64 *n = bpf_map_lookup_elem(&fib_results, &rc);
	if (n)
		__sync_fetch_and_add(n, 1);
}

SEC("xdp")
int xdp_fib_router(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = data + sizeof(*eth);
	struct bpf_fib_lookup fib = {};

	if ((void *)(iph + 1) > data_end || eth->h_proto != bpf_htons(ETH_P_IP) || iph->ttl <= 1) {
		count(10);
		return XDP_PASS;
	}
	fib.family = AF_INET;
	fib.tos = iph->tos;
	fib.l4_protocol = iph->protocol;
	fib.tot_len = bpf_ntohs(iph->tot_len);
	fib.ipv4_src = iph->saddr;
	fib.ipv4_dst = iph->daddr;
	fib.ifindex = ctx->ingress_ifindex;

	long rc = bpf_fib_lookup(ctx, &fib, sizeof(fib), 0);
	if (rc < 0 || rc > 9) {
		count(10);
		return XDP_PASS;
	}
	count(rc);
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS:
		break;
	case BPF_FIB_LKUP_RET_BLACKHOLE:
	case BPF_FIB_LKUP_RET_UNREACHABLE:
	case BPF_FIB_LKUP_RET_PROHIBIT:
		return XDP_DROP;
	default:
		return XDP_PASS;
	}
	/* TTL - 1: the 16-bit word holding it drops by 0x0100. */
	__u32 check = iph->check;
	check += bpf_htons(0x0100);
	iph->check = (__sum16)(check + (check >= 0xFFFF));
	iph->ttl--;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect(fib.ifindex, 0);
}

char _license[] SEC("license") = "Dual MIT/GPL";

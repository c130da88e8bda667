// SPDX-License-Identifier: MIT
/* xdp_tailcall dispatches IPv4 frames by protocol through the program array
 * jmp_table, filled by the object itself (libbpf's static initialisation of
 * a prog_array): TCP to xdp_tc_tcp (counts, XDP_DROP), UDP to xdp_tc_udp
 * (swaps MACs and the UDP ports, XDP_TX), ICMP to xdp_tc_icmp (counts,
 * XDP_PASS). Slot 3 is empty: IPv6 frames tail-call it, the call fails and
 * the dispatcher goes on to return XDP_PASS, as for anything else.
 * tc_hits counts per slot, the failed call included. */
#include "xdp_common.h"

enum { SLOT_TCP, SLOT_UDP, SLOT_ICMP, SLOT_EMPTY, NR_SLOTS };

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, NR_SLOTS);
} tc_hits SEC(".maps");

static __always_inline void hit(__u32 slot)
{
	__u64 *cnt = bpf_map_lookup_elem(&tc_hits, &slot);
	if (cnt)
		*cnt += 1;
}

SEC("xdp")
int xdp_tc_tcp(struct xdp_md *ctx)
{
	hit(SLOT_TCP);
	return XDP_DROP;
}

SEC("xdp")
int xdp_tc_udp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__be16 proto;

	hit(SLOT_UDP);
	int off = parse_eth(data, data_end, &proto);
	if (off < 0)
		return XDP_ABORTED;
	struct iphdr *iph = data + off;
	if ((void *)(iph + 1) > data_end || iph->ihl < 5)
		return XDP_ABORTED;
	struct udphdr *udp = (void *)iph + (iph->ihl & 0xf) * 4;
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	__be16 port = udp->source;
	udp->source = udp->dest;
	udp->dest = port;
	swap_macs(data);
	return XDP_TX;
}

SEC("xdp")
int xdp_tc_icmp(struct xdp_md *ctx)
{
	hit(SLOT_ICMP);
	return XDP_PASS;
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, NR_SLOTS);
	__uint(key_size, sizeof(__u32));
	__array(values, int(void *));
} jmp_table SEC(".maps") = {
	.values = {
		[SLOT_TCP] = (void *)&xdp_tc_tcp,
		[SLOT_UDP] = (void *)&xdp_tc_udp,
		[SLOT_ICMP] = (void *)&xdp_tc_icmp,
	},
};

SEC("xdp")
int xdp_tailcall(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__be16 proto;

	int off = parse_eth(data, data_end, &proto);
	if (off < 0)
		return XDP_PASS;
	if (proto == bpf_htons(ETH_P_IPV6)) {
		hit(SLOT_EMPTY);
		bpf_tail_call(ctx, &jmp_table, SLOT_EMPTY);
		return XDP_PASS;
	}
	if (proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *iph = data + off;
	if ((void *)(iph + 1) > data_end)
		return XDP_PASS;

	switch (iph->protocol) {
	case IPPROTO_TCP:
		bpf_tail_call(ctx, &jmp_table, SLOT_TCP);
		break;
	case IPPROTO_UDP:
		bpf_tail_call(ctx, &jmp_table, SLOT_UDP);
		break;
	case IPPROTO_ICMP:
		bpf_tail_call(ctx, &jmp_table, SLOT_ICMP);
		break;
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
/* xdp_reference is the speed reference of xnic (FACTS.md "Speed
 * references"): it parses Ethernet, IPv4 and UDP and drops UDP datagrams to
 * port 9 (discard), passing everything else. No map, no helper: on a
 * 64-byte UDP frame to port 9 it executes 33 instructions (FACTS.md: "about
 * 32"), all parsing and bounds checks. */
#include "xdp_common.h"

#define DISCARD_PORT 9

SEC("xdp")
int xdp_reference(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *iph = (void *)(eth + 1);

	if ((void *)(iph + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	if (iph->version != 4 || iph->ihl < 5)
		return XDP_PASS;
	if (iph->frag_off & bpf_htons(0x1fff))
		return XDP_PASS;
	if (iph->protocol != IPPROTO_UDP)
		return XDP_PASS;
	struct udphdr *udp = (void *)iph + iph->ihl * 4;
	if ((void *)(udp + 1) > data_end)
		return XDP_PASS;
	if (udp->dest == bpf_htons(DISCARD_PORT))
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

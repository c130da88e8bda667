// SPDX-License-Identifier: MIT
// The reference program of xnic's benchmarks: parse Ethernet, IPv4 and UDP
// and drop UDP to port 9 (discard), pass everything else.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

SEC("xdp")
int xdp_parse(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_DROP;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > data_end)
		return XDP_DROP;
	if (ip->ihl != 5 || ip->version != 4)
		return XDP_PASS;
	if (ip->frag_off & bpf_htons(0x3fff))
		return XDP_PASS;
	if (ip->protocol != IPPROTO_UDP)
		return XDP_PASS;
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > data_end)
		return XDP_DROP;
	if (bpf_ntohs(udp->len) < sizeof(*udp))
		return XDP_DROP;
	if (udp->dest == bpf_htons(9))
		return XDP_DROP;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";

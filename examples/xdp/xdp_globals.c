// SPDX-License-Identifier: MIT
/* xdp_globals exercises global data: configuration in .rodata (a constant
 * the loader may rewrite and a constant table indexed at run time), mutable
 * state in .data (initialised) and .bss (zeroed), and a named section
 * .data.stats. UDP frames to drop_port are dropped; everything else passes.
 * Counters are plain (not atomic) increments: one CPU runs them in tests. */
#include "xdp_common.h"

volatile const __u16 drop_port = 9;
/* Verdict for each of the low 2 bits of the IPv4 TOS: a table the compiler
 * keeps in .rodata because the index is only known at run time. */
volatile const __u8 tos_verdict[4] = {XDP_PASS, XDP_PASS, XDP_PASS, XDP_DROP};

__u64 bytes_seen = 1000000; /* .data: starts at a non-zero value */
__u32 last_len = 0xffffffff;

__u64 frames;                 /* .bss */
__u64 per_verdict[5];         /* .bss, indexed by the verdict */

__u64 udp_frames SEC(".data.stats") = 7;

SEC("xdp")
int xdp_globals(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 verdict = XDP_PASS;
	__be16 proto;

	frames++;
	bytes_seen += data_end - data;
	last_len = data_end - data;

	int off = parse_eth(data, data_end, &proto);
	if (off < 0 || proto != bpf_htons(ETH_P_IP))
		goto out;
	struct iphdr *iph = data + off;
	if ((void *)(iph + 1) > data_end)
		goto out;
	verdict = tos_verdict[iph->tos & 3];
	if (iph->protocol != IPPROTO_UDP || iph->ihl != 5)
		goto out;
	struct udphdr *udp = (void *)(iph + 1);
	if ((void *)(udp + 1) > data_end)
		goto out;
	udp_frames++;
	if (udp->dest == bpf_htons(drop_port))
		verdict = XDP_DROP;
out:
	if (verdict < 5)
		per_verdict[verdict]++;
	return verdict;
}

char _license[] SEC("license") = "Dual MIT/GPL";

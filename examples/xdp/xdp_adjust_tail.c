// SPDX-License-Identifier: MIT
/* xdp_adjust_tail answers IPv4 frames longer than max_pcktsz bytes (Ethernet
 * header included) with an ICMP "destination unreachable, fragmentation
 * needed" (type 3, code 4) carrying next-hop MTU max_pcktsz - 14, built in
 * place and sent back with XDP_TX, like the kernel's samples/bpf
 * xdp_adjust_tail. Shorter IPv4 frames and everything else go to XDP_PASS.
 *
 * With the default of 400, a 300-byte ping (328-byte IP packet) is answered
 * by the host stack while a 500-byte ping (528) gets "Frag needed and DF set
 * (mtu = 386)".
 *
 * The reply: the frame is cut with bpf_xdp_adjust_tail to 98 bytes (the
 * Ethernet header, the original IP header and 64 bytes of what follows),
 * then bpf_xdp_adjust_head makes room in front for a new IP and ICMP header
 * (28 bytes). The result is 126 bytes: Ethernet (addresses swapped), IP
 * (addresses swapped, TTL 64), ICMP, then the quoted 84 bytes.
 * icmpcnt[0] counts the replies. */
#include "xdp_common.h"

#define QUOTED_FRAME 98 /* Ethernet + IP header + 64 bytes quoted */
#define NEW_HDRS (sizeof(struct iphdr) + sizeof(struct icmp_hdr)) /* 28 */
#define REPLY_LEN (QUOTED_FRAME + NEW_HDRS) /* 126 */
#define REPLY_TTL 64

volatile const __u32 max_pcktsz = 400;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} icmpcnt SEC(".maps");

static __always_inline int send_too_big(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_head(ctx, -(int)NEW_HDRS))
		return XDP_DROP;

	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + REPLY_LEN > data_end)
		return XDP_DROP;

	struct ethhdr *eth = data;
	struct ethhdr *orig_eth = data + NEW_HDRS;
	struct iphdr *iph = data + sizeof(struct ethhdr);
	struct icmp_hdr *icmp = (void *)(iph + 1);
	struct iphdr *orig_iph = (void *)(icmp + 1);

	__builtin_memcpy(eth->h_dest, orig_eth->h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, orig_eth->h_dest, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);

	icmp->type = ICMP_DEST_UNREACH;
	icmp->code = ICMP_FRAG_NEEDED;
	icmp->checksum = 0;
	icmp->unused = 0;
	icmp->mtu = bpf_htons((__u16)(max_pcktsz - sizeof(struct ethhdr)));
	icmp->checksum = csum_fold(bpf_csum_diff(0, 0, (void *)icmp,
						 REPLY_LEN - sizeof(struct ethhdr) - sizeof(struct iphdr), 0));

	__be32 src = orig_iph->saddr, dst = orig_iph->daddr;
	iph->version = 4;
	iph->ihl = 5;
	iph->tos = 0;
	iph->tot_len = bpf_htons(REPLY_LEN - sizeof(struct ethhdr));
	iph->id = 0;
	iph->frag_off = 0;
	iph->ttl = REPLY_TTL;
	iph->protocol = IPPROTO_ICMP;
	iph->check = 0;
	iph->saddr = dst;
	iph->daddr = src;
	iph->check = csum_fold(bpf_csum_diff(0, 0, (void *)iph, sizeof(*iph), 0));

	__u32 key = 0;
	__u64 *cnt = bpf_map_lookup_elem(&icmpcnt, &key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
	return XDP_TX;
}

SEC("xdp")
int xdp_adjust_tail(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;

	int len = data_end - data;
	int limit = max_pcktsz > QUOTED_FRAME ? max_pcktsz : QUOTED_FRAME;
	if (len <= limit)
		return XDP_PASS;
	if (bpf_xdp_adjust_tail(ctx, -(len - QUOTED_FRAME)))
		return XDP_PASS;
	return send_too_big(ctx);
}

char _license[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
/* xdp_ipip encapsulates IPv4 frames in IPv4 (IP protocol 4, RFC 2003) and
 * sends them back out with XDP_TX, like the kernel's samples/bpf
 * xdp_tx_iptunnel: bpf_xdp_adjust_head makes room for the outer header, the
 * Ethernet header moves to the new front with its addresses swapped, and the
 * outer header gets tunnel_src/tunnel_dst (from .rodata), TTL 64, DF, the
 * inner TOS and a checksum computed with bpf_csum_diff. Anything that is not
 * IPv4 with a complete 20-byte header passes; encapsulated counts frames. */
#include "xdp_common.h"

volatile const __be32 tunnel_src = 0x0100000a; /* 10.0.0.1 in network order */
volatile const __be32 tunnel_dst = 0x0200000a; /* 10.0.0.2 */

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} encapsulated SEC(".maps");

SEC("xdp")
int xdp_ipip(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct iphdr *inner = (void *)(eth + 1);

	if ((void *)(inner + 1) > data_end)
		return XDP_PASS;
	if (eth->h_proto != bpf_htons(ETH_P_IP) || inner->version != 4 || inner->ihl < 5)
		return XDP_PASS;
	__u16 inner_len = bpf_ntohs(inner->tot_len);
	__u8 tos = inner->tos;
	struct ethhdr saved = *eth;

	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct iphdr)))
		return XDP_DROP;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	eth = data;
	struct iphdr *outer = (void *)(eth + 1);
	if ((void *)(outer + 1) > data_end)
		return XDP_DROP;

	__builtin_memcpy(eth->h_dest, saved.h_source, ETH_ALEN);
	__builtin_memcpy(eth->h_source, saved.h_dest, ETH_ALEN);
	eth->h_proto = bpf_htons(ETH_P_IP);

	outer->version = 4;
	outer->ihl = 5;
	outer->tos = tos;
	outer->tot_len = bpf_htons(inner_len + sizeof(struct iphdr));
	outer->id = 0;
	outer->frag_off = bpf_htons(0x4000); /* DF */
	outer->ttl = 64;
	outer->protocol = IPPROTO_IPIP;
	outer->check = 0;
	outer->saddr = tunnel_src;
	outer->daddr = tunnel_dst;
	outer->check = csum_fold(bpf_csum_diff(0, 0, (void *)outer, sizeof(*outer), 0));

	__u32 key = 0;
	__u64 *cnt = bpf_map_lookup_elem(&encapsulated, &key);
	if (cnt)
		*cnt += 1;
	return XDP_TX;
}

char _license[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
/* xdp_events reports frames to user space through the ring buffer events
 * and passes every frame:
 *   - an IPv4 TCP segment with SYN set gets a struct syn_event, reserved
 *     with bpf_ringbuf_reserve and submitted, unless RST is set too (then
 *     the reservation is discarded: nothing is seen);
 *   - an IPv4 ICMP message gets a struct icmp_event copied in with
 *     bpf_ringbuf_output;
 * Each syn_event carries a checksum of the frame's first 16 bytes computed
 * with bpf_loop (a byte-wise rotate-and-add), so the loop helper is
 * exercised too. dropped_events counts reservations that failed. */
#include "xdp_common.h"

#define HEAD 16
#define TCP_FLAG_SYN 0x02
#define TCP_FLAG_RST 0x04

struct syn_event {
	__u32 len;
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u32 head_sum;
	__u8 head[HEAD];
};

struct icmp_event {
	__u32 len;
	__u8 type;
	__u8 code;
	__u16 pad;
};

/* The records' types in the object's BTF, so that a consumer can decode
 * them (xnic prog events; bpf2go -type does the same): clang emits BTF for
 * the types of globals, not of locals. */
const struct syn_event *unused_syn_event __attribute__((unused));
const struct icmp_event *unused_icmp_event __attribute__((unused));

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} dropped_events SEC(".maps");

struct sum_ctx {
	__u8 bytes[HEAD];
	__u32 sum;
};

static long sum_step(__u32 i, void *data)
{
	struct sum_ctx *c = data;
	c->sum = ((c->sum << 5) | (c->sum >> 27)) + c->bytes[i & (HEAD - 1)];
	return 0;
}

static __always_inline void count_drop(void)
{
	__u32 key = 0;
	__u64 *cnt = bpf_map_lookup_elem(&dropped_events, &key);
	if (cnt)
		__sync_fetch_and_add(cnt, 1);
}

SEC("xdp")
int xdp_events(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 len = data_end - data;
	__be16 proto;

	int off = parse_eth(data, data_end, &proto);
	if (off < 0 || proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *iph = data + off;
	if ((void *)(iph + 1) > data_end || iph->ihl < 5)
		return XDP_PASS;
	void *l4 = (void *)iph + (iph->ihl & 0xf) * 4;

	if (iph->protocol == IPPROTO_ICMP) {
		struct icmp_hdr *icmp = l4;
		if ((void *)(icmp + 1) > data_end)
			return XDP_PASS;
		struct icmp_event ev = {.len = len, .type = icmp->type, .code = icmp->code};
		if (bpf_ringbuf_output(&events, &ev, sizeof(ev), 0))
			count_drop();
		return XDP_PASS;
	}
	if (iph->protocol != IPPROTO_TCP)
		return XDP_PASS;
	struct tcphdr *tcp = l4;
	if ((void *)(tcp + 1) > data_end)
		return XDP_PASS;
	__u8 flags = ((__u8 *)tcp)[13];
	if (!(flags & TCP_FLAG_SYN))
		return XDP_PASS;

	struct syn_event *ev = bpf_ringbuf_reserve(&events, sizeof(*ev), 0);
	if (!ev) {
		count_drop();
		return XDP_PASS;
	}
	struct sum_ctx sc = {};
	if (bpf_xdp_load_bytes(ctx, 0, sc.bytes, HEAD)) {
		bpf_ringbuf_discard(ev, 0);
		return XDP_PASS;
	}
	bpf_loop(HEAD, sum_step, &sc, 0);
	ev->len = len;
	ev->saddr = iph->saddr;
	ev->daddr = iph->daddr;
	ev->sport = tcp->source;
	ev->dport = tcp->dest;
	ev->head_sum = sc.sum;
	__builtin_memcpy(ev->head, sc.bytes, HEAD);
	if (flags & TCP_FLAG_RST)
		bpf_ringbuf_discard(ev, 0);
	else
		bpf_ringbuf_submit(ev, 0);
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

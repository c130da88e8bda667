// SPDX-License-Identifier: MIT
/* xdp_meta pads short frames and leaves metadata for whoever receives the
 * frame next (an AF_XDP consumer, a cpumap program, the host stack):
 *   - frames shorter than 60 bytes (the Ethernet minimum without FCS) grow
 *     to 60 with bpf_xdp_adjust_tail (the grown bytes arrive zeroed) and get
 *     0xBEEF in their last two bytes through bpf_xdp_store_bytes;
 *   - 8 bytes of metadata go in front of the frame with bpf_xdp_adjust_meta:
 *     a mark (the frame's first 4 bytes read with bpf_xdp_load_bytes, XOR
 *     the receive queue, XOR 0xA5A5A5A5) and the original length as
 *     bpf_xdp_get_buff_len saw it.
 * The verdict is XDP_PASS; a helper failure gives XDP_ABORTED. padded
 * counts the frames grown. */
#include "xdp_common.h"

#define MIN_FRAME 60

struct meta {
	__u32 mark;
	__u32 len;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} padded SEC(".maps");

SEC("xdp")
int xdp_meta(struct xdp_md *ctx)
{
	__u32 len = bpf_xdp_get_buff_len(ctx);
	__u32 first = 0;

	if (len < MIN_FRAME) {
		if (bpf_xdp_adjust_tail(ctx, MIN_FRAME - (int)len))
			return XDP_ABORTED;
		__be16 tag = bpf_htons(0xBEEF);
		if (bpf_xdp_store_bytes(ctx, MIN_FRAME - sizeof(tag), &tag, sizeof(tag)))
			return XDP_ABORTED;
		__u32 key = 0;
		__u64 *cnt = bpf_map_lookup_elem(&padded, &key);
		if (cnt)
			*cnt += 1;
	}
	if (bpf_xdp_load_bytes(ctx, 0, &first, sizeof(first)))
		return XDP_ABORTED;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct meta)))
		return XDP_ABORTED;

	void *data = (void *)(long)ctx->data;
	struct meta *m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > data)
		return XDP_ABORTED;
	m->mark = first ^ ctx->rx_queue_index ^ 0xA5A5A5A5;
	m->len = len;
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
// Test program for the loader and helpers: global data, maps, bpf-to-bpf
// calls, bpf_loop, tail calls, adjust_head/tail/meta, trace_printk, ringbuf.
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 8);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} seen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 4);
	__type(key, __u32);
	__type(value, __u32);
} jumps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} events SEC(".maps");

volatile const __u32 cfg_action = XDP_PASS; /* .rodata */
__u64 runs = 0;                            /* .bss */
__u32 magic = 0x1234;                      /* .data */

static __noinline __u32 sum_bytes(__u8 *p, void *end, __u32 n)
{
	__u32 s = 0;
	for (__u32 i = 0; i < 16 && i < n; i++) {
		if ((void *)(p + i + 1) > end)
			break;
		s += p[i];
	}
	return s;
}

struct loopctx {
	__u64 total;
};

static long add_one(__u32 index, void *c)
{
	struct loopctx *lc = c;
	lc->total += index;
	return index >= 9; /* stop after index 9 */
}

static void count(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);
	if (v)
		__sync_fetch_and_add(v, 1);
}

/* Counts, remembers the first byte, and returns cfg_action. */
SEC("xdp")
int xdp_main(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;

	runs++;
	count(0);
	if (data + 1 > data_end)
		return XDP_ABORTED;
	__u32 k = *(__u8 *)data;
	__u32 one = 1;
	bpf_map_update_elem(&seen, &k, &one, BPF_NOEXIST);
	__u32 s = sum_bytes(data, data_end, 16);
	__u32 slot = 1;
	__u64 *v = bpf_map_lookup_elem(&counters, &slot);
	if (v)
		*v = s;
	struct loopctx lc = {0};
	long n = bpf_loop(100, add_one, &lc, 0);
	slot = 2;
	v = bpf_map_lookup_elem(&counters, &slot);
	if (v)
		*v = lc.total * 1000 + n;
	slot = 3;
	v = bpf_map_lookup_elem(&counters, &slot);
	if (v)
		*v = magic;
	return cfg_action;
}

/* Tail-calls slot 0 of jumps; XDP_DROP when the slot is empty. */
SEC("xdp")
int xdp_jump(struct xdp_md *ctx)
{
	bpf_tail_call(ctx, &jumps, 0);
	return XDP_DROP;
}

SEC("xdp")
int xdp_tx(struct xdp_md *ctx)
{
	count(4);
	return XDP_TX;
}

/* Pushes 4 bytes in front (adjust_head -4), writes 0xaabbccdd there, adds 8 bytes
 * of metadata and trims 2 bytes at the end. */
SEC("xdp")
int xdp_adjust(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_head(ctx, -4))
		return XDP_ABORTED;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + 4 > data_end)
		return XDP_ABORTED;
	*(__u32 *)data = bpf_htonl(0xaabbccdd);
	if (bpf_xdp_adjust_meta(ctx, -8))
		return XDP_ABORTED;
	void *meta = (void *)(long)ctx->data_meta;
	data = (void *)(long)ctx->data;
	if (meta + 8 > data)
		return XDP_ABORTED;
	*(__u64 *)meta = 0x1122334455667788ULL;
	if (bpf_xdp_adjust_tail(ctx, -2))
		return XDP_ABORTED;
	return XDP_PASS;
}

/* Prints and sends an event. */
SEC("xdp")
int xdp_events(struct xdp_md *ctx)
{
	__u32 len = ctx->data_end - ctx->data;
	bpf_printk("len %u queue %d", len, ctx->rx_queue_index);
	__u32 *e = bpf_ringbuf_reserve(&events, sizeof(__u32), 0);
	if (!e)
		return XDP_DROP;
	*e = len;
	bpf_ringbuf_submit(e, 0);
	__u64 x = len;
	bpf_ringbuf_output(&events, &x, sizeof(x), 0);
	return XDP_PASS;
}

/* Reads past data_end without a check: xnic must abort it. */
SEC("xdp")
int xdp_oob(struct xdp_md *ctx)
{
	volatile __u8 *data = (void *)(long)ctx->data;
	return data[4000] ? XDP_PASS : XDP_DROP;
}

char _license[] SEC("license") = "GPL";

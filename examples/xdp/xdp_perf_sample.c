// SPDX-License-Identifier: MIT
/* xdp_perf_sample sends every frame's first bytes (up to 128) to user space
 * through a perf event array, as xdpdump does: a small header (a cookie, the
 * frame's length and how many bytes follow) then the frame bytes, appended
 * by bpf_perf_event_output itself (the length in BPF_F_CTXLEN_MASK). Frames
 * pass. samples counts the outputs that failed (ring full: -ENOSPC). */
#include "xdp_common.h"

#define SAMPLE_COOKIE 0xdade
#define SAMPLE_MAX 128

struct sample_hdr {
	__u16 cookie;
	__u16 pkt_len;
	__u16 cap_len;
	__u16 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} failed SEC(".maps");

SEC("xdp")
int xdp_perf_sample(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	__u64 cap = len < SAMPLE_MAX ? len : SAMPLE_MAX;
	struct sample_hdr hdr = {
		.cookie = SAMPLE_COOKIE,
		.pkt_len = len,
		.cap_len = cap,
	};
	__u64 flags = BPF_F_CURRENT_CPU | (cap << 32);

	if (bpf_perf_event_output(ctx, &events, flags, &hdr, sizeof(hdr)) < 0) {
		__u32 zero = 0;
		__u64 *n = bpf_map_lookup_elem(&failed, &zero);
		if (n)
			__sync_fetch_and_add(n, 1);
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

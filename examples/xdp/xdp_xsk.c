// SPDX-License-Identifier: MIT
/* xdp_xsk hands every frame to the AF_XDP socket (or xnic Go consumer) bound
 * to the receive queue it arrived on, through the xskmap xsks; a queue with
 * no socket falls back to XDP_PASS. */
#include "xdp_common.h"

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 64);
} xsks SEC(".maps");

SEC("xdp")
int xdp_xsk(struct xdp_md *ctx)
{
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";

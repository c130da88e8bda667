// SPDX-License-Identifier: MIT
/* xdp_spinlock_stats keeps consistent per-protocol statistics that need more
 * than one atomic add: packets, bytes and the largest frame seen, updated
 * together under the entry's bpf_spin_lock so that a reader never sees one
 * without the others. The key is the IP protocol (0 for non-IPv4 frames).
 * Frames pass. */
#include "xdp_common.h"

struct proto_stats {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 packets;
	__u64 bytes;
	__u64 max_len;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct proto_stats);
	__uint(max_entries, 256);
} stats SEC(".maps");

SEC("xdp")
int xdp_spinlock_stats(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	__u32 key = 0;
	__be16 proto;

	int off = parse_eth(data, data_end, &proto);
	struct iphdr *iph = data + (off < 0 ? 0 : off);
	if (off >= 0 && proto == bpf_htons(ETH_P_IP) && (void *)(iph + 1) <= data_end)
		key = iph->protocol;
	struct proto_stats *st = bpf_map_lookup_elem(&stats, &key);
	if (!st)
		return XDP_PASS;
	bpf_spin_lock(&st->lock);
	st->packets++;
	st->bytes += len;
	if (len > st->max_len)
		st->max_len = len;
	bpf_spin_unlock(&st->lock);
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

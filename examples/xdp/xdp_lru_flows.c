// SPDX-License-Identifier: MIT
/* xdp_lru_flows keeps packet and byte counts per IPv4 5-tuple in an LRU hash
 * (ports are zero for protocols other than TCP and UDP, and for fragments
 * after the first) and passes every frame. Non-IPv4 frames count in
 * other_frames. */
#include "xdp_common.h"

struct flow_key {
	__be32 saddr;
	__be32 daddr;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 pad[3];
};

struct flow_stats {
	__u64 packets;
	__u64 bytes;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct flow_key);
	__type(value, struct flow_stats);
	__uint(max_entries, 65536);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} other_frames SEC(".maps");

SEC("xdp")
int xdp_lru_flows(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u64 len = data_end - data;
	__be16 proto;
	__u32 zero = 0;

	int off = parse_eth(data, data_end, &proto);
	struct iphdr *iph = data + (off < 0 ? 0 : off);
	if (off < 0 || proto != bpf_htons(ETH_P_IP) || (void *)(iph + 1) > data_end) {
		__u64 *other = bpf_map_lookup_elem(&other_frames, &zero);
		if (other)
			__sync_fetch_and_add(other, 1);
		return XDP_PASS;
	}

	struct flow_key key = {};
	key.saddr = iph->saddr;
	key.daddr = iph->daddr;
	key.proto = iph->protocol;
	if ((iph->protocol == IPPROTO_TCP || iph->protocol == IPPROTO_UDP) &&
	    (iph->frag_off & bpf_htons(0x1fff)) == 0 && iph->ihl >= 5) {
		__be16 *ports = (void *)iph + (iph->ihl & 0xf) * 4;
		if ((void *)(ports + 2) <= data_end) {
			key.sport = ports[0];
			key.dport = ports[1];
		}
	}

	struct flow_stats *st = bpf_map_lookup_elem(&flows, &key);
	if (st) {
		__sync_fetch_and_add(&st->packets, 1);
		__sync_fetch_and_add(&st->bytes, len);
	} else {
		struct flow_stats init = {.packets = 1, .bytes = len};
		bpf_map_update_elem(&flows, &key, &init, BPF_NOEXIST);
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

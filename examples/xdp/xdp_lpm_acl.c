// SPDX-License-Identifier: MIT
/* xdp_lpm_acl drops IPv4 frames whose source address matches a prefix in the
 * LPM trie acl_v4 and passes everything else. The value of each prefix is
 * its hit counter, incremented atomically on every match. The control plane
 * fills the trie: key {prefixlen, address in network order}, value 0. */
#include "xdp_common.h"

struct lpm_v4_key {
	__u32 prefixlen;
	__be32 addr;
};

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__type(key, struct lpm_v4_key);
	__type(value, __u64);
	__uint(max_entries, 1024);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} acl_v4 SEC(".maps");

SEC("xdp")
int xdp_lpm_acl(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__be16 proto;

	int off = parse_eth(data, data_end, &proto);
	if (off < 0 || proto != bpf_htons(ETH_P_IP))
		return XDP_PASS;
	struct iphdr *iph = data + off;
	if ((void *)(iph + 1) > data_end)
		return XDP_PASS;

	struct lpm_v4_key key = {.prefixlen = 32, .addr = iph->saddr};
	__u64 *hits = bpf_map_lookup_elem(&acl_v4, &key);
	if (!hits)
		return XDP_PASS;
	__sync_fetch_and_add(hits, 1);
	return XDP_DROP;
}

char _license[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
/* xdp_mapinmap_acl drops IPv4 frames whose source address is in the block
 * list of the receiving port: port_acls is an array of maps indexed by
 * ingress_ifindex, each entry a hash of blocked sources (the inner map
 * template is declared with BTF __array). Port 1's list, acl_port1, is put
 * in place by the object itself; the control plane swaps lists at run time.
 * Other frames pass. drops counts per receiving port. */
#include "xdp_common.h"

struct acl {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, __be32);
	__type(value, __u8);
	__uint(max_entries, 256);
};

struct acl acl_port1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 8);
	__type(key, __u32);
	__array(values, struct acl);
} port_acls SEC(".maps") = {
	.values = {[1] = &acl_port1},
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 8);
} drops SEC(".maps");

SEC("xdp")
int xdp_mapinmap_acl(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	__u32 port = ctx->ingress_ifindex;
	__be16 proto;

	int off = parse_eth(data, data_end, &proto);
	struct iphdr *iph = data + (off < 0 ? 0 : off);
	if (off < 0 || proto != bpf_htons(ETH_P_IP) || (void *)(iph + 1) > data_end)
		return XDP_PASS;
	void *acl = bpf_map_lookup_elem(&port_acls, &port);
	if (!acl)
		return XDP_PASS;
	__be32 src = iph->saddr;
	if (!bpf_map_lookup_elem(acl, &src))
		return XDP_PASS;
	__u64 *n = bpf_map_lookup_elem(&drops, &port);
	if (n)
		__sync_fetch_and_add(n, 1);
	return XDP_DROP;
}

char _license[] SEC("license") = "Dual MIT/GPL";

// SPDX-License-Identifier: MIT
/* xdp_hw_meta asks the driver what the NIC knows about each UDP frame to
 * meta_port (IPv4 or IPv6, behind up to two VLAN tags) through the XDP
 * metadata kfuncs (Documentation/networking/xdp-rx-metadata.rst):
 * bpf_xdp_metadata_rx_timestamp, bpf_xdp_metadata_rx_hash and
 * bpf_xdp_metadata_rx_vlan_tag. It writes what they returned in front of the
 * frame (bpf_xdp_adjust_meta, struct hw_meta below: 32 bytes, the kernel's
 * largest metadata) and redirects the frame to the xskmap entry of its
 * receive queue, for an AF_XDP consumer (xnic hwmeta) to read. Each kfunc's
 * result is kept: 0 with the value, -ENODATA (61) when this frame has none,
 * -EOPNOTSUPP (95) when the device cannot report it. Other frames, and
 * frames whose queue has no socket, get XDP_PASS; a failed adjust_meta
 * XDP_ABORTED. */
#include "xdp_common.h"

/* The kfuncs, as the kernel declares them (net/core/xdp.c); the hash type is
 * the kernel's enum xdp_rss_hash_type, 4 bytes. */
extern int bpf_xdp_metadata_rx_timestamp(const struct xdp_md *ctx, __u64 *timestamp) __ksym;
extern int bpf_xdp_metadata_rx_hash(const struct xdp_md *ctx, __u32 *hash, __u32 *rss_type) __ksym;
extern int bpf_xdp_metadata_rx_vlan_tag(const struct xdp_md *ctx, __be16 *vlan_proto,
					__u16 *vlan_tci) __ksym;

/* The metadata in front of the frame, in host (little-endian) order except
 * vlan_proto, which stays in network order as the kfunc gives it. A field
 * whose *_err is not 0 is zero. */
struct hw_meta {
	__u64 rx_timestamp; /* ns of the device clock */
	__s32 timestamp_err;
	__u32 rx_hash;
	__u32 rx_hash_type; /* enum xdp_rss_hash_type */
	__s32 hash_err;
	__be16 vlan_proto;
	__u16 vlan_tci;
	__s32 vlan_err;
};

/* The UDP destination port whose frames get metadata; the loader may
 * rewrite it. */
volatile const __u16 meta_port = 9091;

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__type(key, __u32);
	__type(value, __u32);
	__uint(max_entries, 64);
} xsks SEC(".maps");

/* udp_dport returns the UDP destination port (network order) of an IPv4 or
 * IPv6 frame, or 0 when the frame is not UDP or is too short. */
static __always_inline __be16 udp_dport(void *data, void *data_end)
{
	__be16 proto;
	int off = parse_eth(data, data_end, &proto);

	if (off < 0)
		return 0;
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = data + off;
		if ((void *)(iph + 1) > data_end || iph->protocol != IPPROTO_UDP || iph->ihl < 5)
			return 0;
		off += iph->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;
		if ((void *)(ip6 + 1) > data_end || ip6->nexthdr != IPPROTO_UDP)
			return 0;
		off += sizeof(*ip6);
	} else {
		return 0;
	}
	struct udphdr *udp = data + off;
	if ((void *)(udp + 1) > data_end)
		return 0;
	return udp->dest;
}

SEC("xdp")
int xdp_hw_meta(struct xdp_md *ctx)
{
	if (udp_dport((void *)(long)ctx->data, (void *)(long)ctx->data_end) != bpf_htons(meta_port))
		return XDP_PASS;
	if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct hw_meta)))
		return XDP_ABORTED;

	void *data = (void *)(long)ctx->data;
	struct hw_meta *m = (void *)(long)ctx->data_meta;
	if ((void *)(m + 1) > data)
		return XDP_ABORTED;

	__u64 ts = 0;
	__u32 hash = 0, type = 0;
	__be16 vproto = 0;
	__u16 vtci = 0;
	m->timestamp_err = bpf_xdp_metadata_rx_timestamp(ctx, &ts);
	m->hash_err = bpf_xdp_metadata_rx_hash(ctx, &hash, &type);
	m->vlan_err = bpf_xdp_metadata_rx_vlan_tag(ctx, &vproto, &vtci);
	m->rx_timestamp = m->timestamp_err ? 0 : ts;
	m->rx_hash = m->hash_err ? 0 : hash;
	m->rx_hash_type = m->hash_err ? 0 : type;
	m->vlan_proto = m->vlan_err ? 0 : vproto;
	m->vlan_tci = m->vlan_err ? 0 : vtci;
	return bpf_redirect_map(&xsks, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";

/* SPDX-License-Identifier: MIT */
/* Shared definitions for the xnic example XDP programs: bounds-checked header
 * parsing helpers and the few protocol structs the uapi headers lack.
 * Every helper takes the current data/data_end and returns NULL (or a negative
 * value) when the header would run past data_end, so the verifier accepts it.
 */
#ifndef XNIC_XDP_COMMON_H
#define XNIC_XDP_COMMON_H

#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#ifndef ETH_P_8021Q
#define ETH_P_8021Q 0x8100
#endif
#ifndef ETH_P_8021AD
#define ETH_P_8021AD 0x88A8
#endif

/* ICMP header (RFC 792) with the "fragmentation needed" layout of RFC 1191;
 * <linux/icmp.h> is not used because it drags in libc headers. */
struct icmp_hdr {
	__u8 type;
	__u8 code;
	__sum16 checksum;
	__be16 unused;
	__be16 mtu; /* next-hop MTU for type 3 code 4 */
};

#define ICMP_ECHOREPLY 0
#define ICMP_DEST_UNREACH 3
#define ICMP_FRAG_NEEDED 4
#define ICMP_ECHO 8

/* 802.1Q tag as it follows the source MAC: TCI then the inner EtherType. */
struct vlan_tag {
	__be16 tci;
	__be16 encap_proto;
};

/* parse_eth skips the Ethernet header and up to two VLAN tags (802.1Q or
 * 802.1ad). It returns the offset of the L3 header and stores the EtherType
 * in *proto (network order), or returns -1 when the frame is too short. */
static __always_inline int parse_eth(void *data, void *data_end, __be16 *proto)
{
	struct ethhdr *eth = data;
	int off = sizeof(*eth);

	if (data + off > data_end)
		return -1;
	*proto = eth->h_proto;

#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (*proto != bpf_htons(ETH_P_8021Q) && *proto != bpf_htons(ETH_P_8021AD))
			break;
		struct vlan_tag *tag = data + off;
		if ((void *)(tag + 1) > data_end)
			return -1;
		*proto = tag->encap_proto;
		off += sizeof(*tag);
	}
	return off;
}

/* swap_macs exchanges the destination and source MAC addresses in place,
 * 16 bits at a time (the frame starts 2-byte aligned; a byte-wise memcpy
 * would cost three times the instructions). */
static __always_inline void swap_macs(void *data)
{
	__u16 *p = data;
	__u16 d0 = p[0], d1 = p[1], d2 = p[2];

	p[0] = p[3];
	p[1] = p[4];
	p[2] = p[5];
	p[3] = d0;
	p[4] = d1;
	p[5] = d2;
}

/* csum_fold folds a 32-bit one's-complement partial sum (as bpf_csum_diff
 * returns it) to the 16-bit Internet checksum, complemented. */
static __always_inline __u16 csum_fold(__u32 csum)
{
	csum = (csum & 0xffff) + (csum >> 16);
	csum = (csum & 0xffff) + (csum >> 16);
	return (__u16)~csum;
}

#endif

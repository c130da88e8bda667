// SPDX-License-Identifier: MIT
/* xdp_vlan pushes or pops an 802.1Q tag with bpf_xdp_adjust_head, as set by
 * the globals in .data (the control plane may change them while the program
 * runs):
 *   vlan_mode 0 (toggle): pop the outer tag of a tagged frame, tag an
 *                         untagged one with vlan_vid;
 *   vlan_mode 1 (push):   add a tag with vlan_vid in front of any tag;
 *   vlan_mode 2 (pop):    remove the outer tag, leave untagged frames.
 * The verdict is XDP_PASS; frames shorter than an Ethernet header (or a
 * tagged one shorter than 18 bytes to pop) pass unchanged. pushed and popped
 * (.bss) count what was done. */
#include "xdp_common.h"

__u16 vlan_vid = 100;
__u8 vlan_mode = 0;

__u64 pushed;
__u64 popped;

static __always_inline int push_tag(struct xdp_md *ctx)
{
	if (bpf_xdp_adjust_head(ctx, -(int)sizeof(struct vlan_tag)))
		return -1;
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	if (data + sizeof(struct ethhdr) + sizeof(struct vlan_tag) > data_end)
		return -1;
	struct ethhdr *old = data + sizeof(struct vlan_tag);
	/* The addresses move 4 bytes forward; the old EtherType stays where it
	 * is and becomes the tag's inner EtherType. */
	__u8 macs[2 * ETH_ALEN];
	__builtin_memcpy(macs, old, sizeof(macs));
	__builtin_memcpy(eth, macs, sizeof(macs));
	eth->h_proto = bpf_htons(ETH_P_8021Q);
	struct vlan_tag *tag = (void *)(eth + 1);
	tag->tci = bpf_htons(vlan_vid & 0x0fff);
	pushed++;
	return 0;
}

static __always_inline int pop_tag(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(struct ethhdr) + sizeof(struct vlan_tag) > data_end)
		return -1;
	__u8 macs[2 * ETH_ALEN];
	__builtin_memcpy(macs, data, sizeof(macs));
	if (bpf_xdp_adjust_head(ctx, (int)sizeof(struct vlan_tag)))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(struct ethhdr) > data_end)
		return -1;
	__builtin_memcpy(data, macs, sizeof(macs));
	popped++;
	return 0;
}

SEC("xdp")
int xdp_vlan(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *data_end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	int tagged = eth->h_proto == bpf_htons(ETH_P_8021Q) ||
		     eth->h_proto == bpf_htons(ETH_P_8021AD);

	switch (vlan_mode) {
	case 0:
		if (tagged)
			pop_tag(ctx);
		else
			push_tag(ctx);
		break;
	case 1:
		push_tag(ctx);
		break;
	case 2:
		if (tagged)
			pop_tag(ctx);
		break;
	}
	return XDP_PASS;
}

char _license[] SEC("license") = "Dual MIT/GPL";

// Package pktgen builds test traffic: IPv4/UDP frames of one flow, as the
// kernel's pktgen_sample03_burst_single_flow sends, and ICMP echo requests; and
// sends them in bursts on a TX queue or hands them to a link.
//
// Frames are whole Ethernet frames without the FCS: a "64-byte frame" here is 64
// bytes from the destination MAC to the end of the payload.
package pktgen

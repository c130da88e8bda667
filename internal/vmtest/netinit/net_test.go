package main

import (
	"encoding/binary"
	"testing"
)

func TestParseIPv4(t *testing.T) {
	if ip, err := parseIPv4("10.0.2.15"); err != nil || ip != [4]byte{10, 0, 2, 15} {
		t.Fatalf("parseIPv4 = %v, %v", ip, err)
	}
	for _, bad := range []string{"", "10.0.2", "10.0.2.256", "a.b.c.d", "1.2.3.4.5"} {
		if _, err := parseIPv4(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// An echo reply built from our request the way a kernel builds it (type 0,
// checksum redone) is recognised; a changed byte, another sequence number or
// another sender is not.
func TestEchoReply(t *testing.T) {
	req := echoRequest(0x1234, 3, 56)
	if inetChecksum(req) != 0 {
		t.Fatal("request checksum does not verify")
	}
	from := [4]byte{10, 0, 2, 2}
	reply := func(mod func(icmp []byte)) []byte {
		icmp := append([]byte(nil), req...)
		icmp[0] = 0
		mod(icmp)
		icmp[2], icmp[3] = 0, 0
		binary.BigEndian.PutUint16(icmp[2:], inetChecksum(icmp))
		ip := make([]byte, 20, 20+len(icmp))
		ip[0] = 0x45
		copy(ip[12:], from[:])
		return append(ip, icmp...)
	}
	if !isEchoReply(reply(func([]byte) {}), from, 0x1234, 3, req[8:]) {
		t.Fatal("a good reply was not recognised")
	}
	if isEchoReply(reply(func(b []byte) { b[20] ^= 1 }), from, 0x1234, 3, req[8:]) {
		t.Error("a reply with other data was accepted")
	}
	if isEchoReply(reply(func([]byte) {}), from, 0x1234, 4, req[8:]) {
		t.Error("a reply to another sequence number was accepted")
	}
	if isEchoReply(reply(func([]byte) {}), [4]byte{10, 0, 2, 3}, 0x1234, 3, req[8:]) {
		t.Error("a reply from another address was accepted")
	}
	bad := reply(func([]byte) {})
	bad[25] ^= 0xff // corrupt the checksum
	if isEchoReply(bad, from, 0x1234, 3, req[8:]) {
		t.Error("a reply with a bad checksum was accepted")
	}
}

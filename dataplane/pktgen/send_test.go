package pktgen

import (
	"bytes"
	"testing"
	"time"

	"github.com/xnic-dev/xnic/dataplane/internal/memport"
)

func TestSend(t *testing.T) {
	p, err := memport.New(memport.Config{TxRing: 64, Record: true})
	if err != nil {
		t.Fatal(err)
	}
	frame, _ := DefaultFlow().UDP()
	st, err := Send(p.TxQueue(0), p.Rx(0).Pool(), frame, 1000, 32, time.Now().Add(5*time.Second), nil)
	if err != nil {
		t.Fatal(err)
	}
	pk, bytesSent, tails, bad := p.Tx(0).Counts()
	if st.Elapsed <= 0 || st.PPS() <= 0 {
		t.Errorf("elapsed %v, pps %v", st.Elapsed, st.PPS())
	}
	if st.Sent != 1000 || pk != 1000 || bytesSent != 64000 || st.Bytes != 64000 || bad != 0 {
		t.Errorf("sent %d (ring saw %d, %d bytes, %d bad)", st.Sent, pk, bytesSent, bad)
	}
	if tails < 1000/32 || tails > 1000/32+2 {
		t.Errorf("%d tail writes for 1000 frames in bursts of 32", tails)
	}
	sent := p.Tx(0).Sent()
	if !bytes.Equal(sent[999], frame) {
		t.Error("frame differs")
	}
	p.Tx(0).Reclaim()
	if err := p.CheckIdle(); err != nil {
		t.Error(err)
	}
	if _, err := Send(p.TxQueue(0), p.Rx(0).Pool(), frame, 1, 0, time.Time{}, nil); err == nil {
		t.Error("burst 0 accepted")
	}
}

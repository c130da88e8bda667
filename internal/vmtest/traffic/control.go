package traffic

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
)

// Control frame layout: Ethernet header (EtherType 0x88B5), "XNCT", a uint16
// big-endian text length, then the text; zero padding up to MinFrameLen.
const (
	offCtlMagic = 14
	offCtlLen   = 18
	offCtlText  = 20
	// MaxControlText is the longest message text that fits a frame.
	MaxControlText = MaxFrameLen - offCtlText
)

var ctlMagic = [4]byte{'X', 'N', 'C', 'T'}

// Verbs of the control protocol. See the package documentation.
const (
	VerbHello  = "hello"
	VerbExpect = "expect"
	VerbReport = "report"
	VerbInject = "inject"
	VerbFlows  = "flows"
	VerbLater  = "later"
	VerbEcho   = "echo"
	VerbAck    = "ack"
	VerbOK     = "ok"
	VerbErr    = "err"
)

// ErrNotControl reports a frame that is not a control frame.
var ErrNotControl = errors.New("traffic: not a control frame")

// Msg is one control message: a verb, a request id and key=value arguments.
// Its text form is "verb id=N key=value ...", keys sorted; values that are not
// plain words are Go-quoted.
type Msg struct {
	Verb string
	ID   uint32
	Args map[string]string
}

// NewMsg returns a message with verb, id and the key/value pairs kv.
func NewMsg(verb string, id uint32, kv ...string) Msg {
	m := Msg{Verb: verb, ID: id, Args: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		m.Args[kv[i]] = kv[i+1]
	}
	return m
}

// Get returns argument k ("" when absent).
func (m Msg) Get(k string) string { return m.Args[k] }

// Int returns argument k as an integer.
func (m Msg) Int(k string) (int64, error) {
	v, ok := m.Args[k]
	if !ok {
		return 0, fmt.Errorf("traffic: %s message lacks %s=", m.Verb, k)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("traffic: %s message: %s=%q is not an integer", m.Verb, k, v)
	}
	return n, nil
}

func plainWord(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._:/+-,", c)) {
			return false
		}
	}
	return true
}

// String is the message's text form.
func (m Msg) String() string {
	var b strings.Builder
	b.WriteString(m.Verb)
	fmt.Fprintf(&b, " id=%d", m.ID)
	keys := make([]string, 0, len(m.Args))
	for k := range m.Args {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := m.Args[k]
		if !plainWord(v) {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	return b.String()
}

// ParseMsg parses a message's text form.
func ParseMsg(s string) (Msg, error) {
	s = strings.TrimSpace(s)
	verb, rest, _ := strings.Cut(s, " ")
	if !plainWord(verb) || strings.Contains(verb, "=") {
		return Msg{}, fmt.Errorf("traffic: control message %q has no verb", s)
	}
	m := Msg{Verb: verb, Args: map[string]string{}}
	haveID := false
	for rest = strings.TrimLeft(rest, " "); rest != ""; rest = strings.TrimLeft(rest, " ") {
		k, after, ok := strings.Cut(rest, "=")
		if !ok || !plainWord(k) {
			return Msg{}, fmt.Errorf("traffic: control message %q: expected key=value at %q", s, rest)
		}
		var v string
		if strings.HasPrefix(after, `"`) {
			q, err := strconv.QuotedPrefix(after)
			if err != nil {
				return Msg{}, fmt.Errorf("traffic: control message %q: bad quoted value for %s: %w", s, k, err)
			}
			v, _ = strconv.Unquote(q)
			rest = after[len(q):]
		} else {
			v, rest, _ = strings.Cut(after, " ")
		}
		if k == "id" {
			id, err := strconv.ParseUint(v, 10, 32)
			if err != nil {
				return Msg{}, fmt.Errorf("traffic: control message %q: bad id %q", s, v)
			}
			m.ID, haveID = uint32(id), true
			continue
		}
		m.Args[k] = v
	}
	if !haveID {
		return Msg{}, fmt.Errorf("traffic: control message %q has no id=", s)
	}
	return m, nil
}

// AppendControl appends a control frame carrying m from src to dst to b.
func AppendControl(b []byte, m Msg, dst, src net.HardwareAddr) ([]byte, error) {
	text := m.String()
	if len(text) > MaxControlText {
		return b, fmt.Errorf("traffic: control message of %d bytes does not fit a frame (max %d)", len(text), MaxControlText)
	}
	n := max(MinFrameLen, offCtlText+len(text))
	start := len(b)
	b = grow(b, n)
	f := b[start:]
	clear(f)
	copy(f[0:6], dst)
	copy(f[6:12], src)
	binary.BigEndian.PutUint16(f[12:], EtherTypeControl)
	copy(f[offCtlMagic:], ctlMagic[:])
	binary.BigEndian.PutUint16(f[offCtlLen:], uint16(len(text)))
	copy(f[offCtlText:], text)
	return b, nil
}

// ParseControl decodes a control frame. It reports ErrNotControl for frames of
// other kinds and a descriptive error for malformed control frames.
func ParseControl(f []byte) (Msg, error) {
	if len(f) < offCtlText || binary.BigEndian.Uint16(f[12:]) != EtherTypeControl {
		return Msg{}, ErrNotControl
	}
	if !bytes.Equal(f[offCtlMagic:offCtlMagic+4], ctlMagic[:]) {
		return Msg{}, fmt.Errorf("traffic: control frame without magic: %w", ErrNotControl)
	}
	n := int(binary.BigEndian.Uint16(f[offCtlLen:]))
	if offCtlText+n > len(f) {
		return Msg{}, fmt.Errorf("traffic: control frame of %d bytes claims %d bytes of text", len(f), n)
	}
	return ParseMsg(string(f[offCtlText : offCtlText+n]))
}

// Kind classifies a frame by its EtherType and magic.
type Kind int

// Frame kinds.
const (
	KindOther Kind = iota
	KindData
	KindFlow
	KindControl
	KindEcho
)

func (k Kind) String() string {
	switch k {
	case KindData:
		return "data"
	case KindFlow:
		return "flow"
	case KindControl:
		return "control"
	case KindEcho:
		return "echo"
	}
	return "other"
}

// Classify says what kind of frame f is, without allocating.
func Classify(f []byte) Kind {
	if len(f) < 14 {
		return KindOther
	}
	switch binary.BigEndian.Uint16(f[12:]) {
	case EtherTypeData:
		if _, _, err := ParseData(f); err == nil {
			return KindData
		}
	case EtherTypeControl:
		if len(f) >= offCtlText && bytes.Equal(f[offCtlMagic:offCtlMagic+4], ctlMagic[:]) {
			return KindControl
		}
	case EtherTypeIPv4:
		if _, _, err := ParseFlow(f); err == nil {
			return KindFlow
		}
		if _, _, err := ParseEcho(f); err == nil {
			return KindEcho
		}
	}
	return KindOther
}

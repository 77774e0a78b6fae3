package smpp

import (
	"strings"
	"testing"
	"time"
)

func TestParseBinds(t *testing.T) {
	bs, err := ParseBinds("safaricom", "smpp://tuma:secret@127.0.0.1:2775?window=50&tps=200&binds=2&concat=sar&reconnect=2s-1m&ids=hex-dec&source_ton=3&source_npi=0&dest_ton=0&dest_npi=1&bind_ton=1&bind_npi=1 "+
		"smpp://other:pw@10.0.0.2:2776")
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 3 || bs[0].Name != "safaricom-1" || bs[2].Name != "safaricom-3" {
		t.Fatalf("%+v", bs)
	}
	b := bs[0]
	if b.Addr != "127.0.0.1:2775" || b.SystemID != "tuma" || b.Password != "secret" || b.Window != 50 || b.TPS != 200 ||
		b.Concat != ConcatSAR || b.ReconnectMin != 2*time.Second || b.ReconnectMax != time.Minute || b.IDForm != IDHexInRespDecInReceipt ||
		b.SourceTON != 3 || b.SourceNPI != 0 || b.DestTON != 0 || b.DestNPI != 1 || b.AddrTON != 1 || b.AddrNPI != 1 {
		t.Fatalf("%+v", b)
	}
	if c := bs[2]; c.Window != DefaultWindow || c.EnquireLink != DefaultEnquireLink || c.Concat != ConcatUDH || c.SystemID != "other" ||
		c.SourceTON != -1 || c.SourceNPI != -1 || c.DestTON != 1 || c.DestNPI != 1 || c.AddrTON != 0 {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestParseBindsRefuses(t *testing.T) {
	for _, v := range []string{"", "http://a:b@h:1", "smpp://a:b@host", "smpp://:b@h:1", "smpp://a:b@h:1?window=0",
		"smpp://a:b@h:1?tps=-1", "smpp://a:b@h:1?colour=red", "smpp://a:b@h:1?reconnect=5s-1s",
		"smpp://a:0123456789@h:1", "smpp://a:b@h:1?concat=magic", "smpp://a:b@h:1?ids=roman", "smpp://a:b@h:1?dest_ton=256",
		"smpp://a:b@h:1?source_npi=x"} {
		if _, err := ParseBinds("n", v); err == nil {
			t.Errorf("%q accepted", v)
		} else if strings.Contains(err.Error(), ":b@") {
			t.Errorf("%q: the error shows the password: %v", v, err)
		}
	}
}

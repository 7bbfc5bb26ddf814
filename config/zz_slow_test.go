package config

import (
	"strings"
	"testing"
	"time"
)

func TestZZBombs(t *testing.T) {
	lol := "a: &a [x,x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
	m := "m0: &m0 {listen: x}\nm1: &m1 {<<: [*m0,*m0,*m0,*m0,*m0,*m0,*m0,*m0,*m0,*m0]}\nm2: &m2 {<<: [*m1,*m1,*m1,*m1,*m1,*m1,*m1,*m1,*m1,*m1]}\nm3: &m3 {<<: [*m2,*m2,*m2,*m2,*m2,*m2,*m2,*m2,*m2,*m2]}\nm4: &m4 {<<: [*m3,*m3,*m3,*m3,*m3,*m3,*m3,*m3,*m3,*m3]}\nm5: &m5 {<<: [*m4,*m4,*m4,*m4,*m4,*m4,*m4,*m4,*m4,*m4]}\nm6: &m6 {<<: [*m5,*m5,*m5,*m5,*m5,*m5,*m5,*m5,*m5,*m5]}\n"
	for name, doc := range map[string]string{
		"lol roles":    lol + "roles: *f\n",
		"lol projects": lol + "projects: *f\n",
		"lol cmd":      lol + "projects: [{pipeline: {command: *f}}]\n",
		"merge":        m + "consumer: *m6\n",
		"merge top":    strings.Replace(m, "listen: x", "projects: [{}]", 1) + "<<: *m6\n",
		"self":         "consumer: &c {<<: *c}\n",
		"deep":         strings.Repeat("[", 5000) + strings.Repeat("]", 5000),
		"deep map":     "projects: " + strings.Repeat("{a: ", 5000) + "1" + strings.Repeat("}", 5000),
	} {
		start := time.Now()
		_, err := Parse([]byte(doc), nil)
		msg := ""
		if err != nil {
			msg = err.Error()
			if len(msg) > 200 {
				msg = msg[:200]
			}
		}
		t.Logf("%s: %v %d %s", name, time.Since(start), len(msg), msg)
	}
}

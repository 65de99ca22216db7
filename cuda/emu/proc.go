package emu

// The kernel process (runtime.cc) and the protocol with it: one request at a time on its
// stdin, one reply on its stdout; the device memory is the memfd it gets as fd 3.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
)

// emuProc is the running child process and its pipes.
type emuProc struct {
	cmd    *exec.Cmd
	req    io.WriteCloser
	resp   io.ReadCloser
	stderr *lockedBuffer
	dead   error // set once the process has died; every later request fails with it
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() < 1<<20 {
		l.b.Write(p)
	}
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Requests of the protocol with runtime.cc.
const (
	emuInit    = 1
	emuKernels = 2
	emuLaunch  = 3
	emuProtect = 4
)

func startProc(prog *emuProgram, mem *os.File) (*emuProc, error) {
	cmd := exec.Command(prog.path)
	cmd.ExtraFiles = []*os.File{mem} // fd 3
	cmd.Env = os.Environ()
	if prog.tsan {
		cmd.Env = append(cmd.Env, "TSAN_OPTIONS=halt_on_error=1 exitcode=66 second_deadlock_stack=1")
	}
	p := &emuProc{cmd: cmd, stderr: &lockedBuffer{}}
	cmd.Stderr = p.stderr
	var err error
	if p.req, err = cmd.StdinPipe(); err != nil {
		return nil, err
	}
	if p.resp, err = cmd.StdoutPipe(); err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cuda: emulator: starting %s: %w", prog.path, err)
	}
	return p, nil
}

// call sends one request and reads its reply: status 0 and a message (the kernel list), or a
// non-zero status and the reason. An error means the process is gone; its exit status and
// what it wrote to stderr are in the error.
func (p *emuProc) call(req []byte) (status uint32, msg string, err error) {
	if p.dead != nil {
		first, _, _ := strings.Cut(p.dead.Error(), "\n")
		return 0, "", fmt.Errorf("the kernel process ended earlier: %s", first)
	}
	if _, err := p.req.Write(req); err != nil {
		return 0, "", p.died()
	}
	var hdr [8]byte
	if _, err := io.ReadFull(p.resp, hdr[:]); err != nil {
		return 0, "", p.died()
	}
	n := binary.LittleEndian.Uint32(hdr[4:])
	b := make([]byte, n)
	if _, err := io.ReadFull(p.resp, b); err != nil {
		return 0, "", p.died()
	}
	return binary.LittleEndian.Uint32(hdr[:4]), string(b), nil
}

func (p *emuProc) died() error {
	p.req.Close()
	werr := p.cmd.Wait()
	msg := strings.TrimSpace(p.stderr.String())
	if msg == "" {
		msg = "(nothing on stderr)"
	}
	p.dead = fmt.Errorf("emulator process ended (%v): %s", werr, msg)
	return p.dead
}

func (p *emuProc) close() error {
	if p.dead != nil {
		return nil
	}
	p.req.Close()
	err := p.cmd.Wait()
	p.dead = errors.New("emulator closed")
	if err != nil {
		return fmt.Errorf("cuda: emulator: %v: %s", err, p.stderr.String())
	}
	return nil
}

// request encodes a request: a u32 op, then the values (u32, u64, or []uint64 as they come).
func request(op uint32, vals ...any) []byte {
	b := binary.LittleEndian.AppendUint32(nil, op)
	for _, v := range vals {
		switch x := v.(type) {
		case uint32:
			b = binary.LittleEndian.AppendUint32(b, x)
		case uint64:
			b = binary.LittleEndian.AppendUint64(b, x)
		case []uint64:
			for _, y := range x {
				b = binary.LittleEndian.AppendUint64(b, y)
			}
		default:
			panic(fmt.Sprintf("cuda: emulator request value %T", v))
		}
	}
	return b
}

//go:build rdma && cgo

package rdma

/*
#cgo LDFLAGS: -libverbs
#include <infiniband/verbs.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

// ibv_query_port and ibv_reg_mr are macros and ibv_post_send,
// ibv_post_recv and ibv_poll_cq static inline functions: cgo calls none of
// them, so these helpers do. Work requests are built here, on the C
// stack, so that Go passes only scalars.

static struct ibv_context *gs_open(const char *name, int *err) {
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	if (list == NULL) {
		*err = errno ? errno : ENODEV;
		return NULL;
	}
	struct ibv_context *ctx = NULL;
	*err = ENODEV;
	for (int i = 0; i < n; i++) {
		if (strcmp(ibv_get_device_name(list[i]), name) == 0) {
			ctx = ibv_open_device(list[i]);
			*err = ctx ? 0 : (errno ? errno : EIO);
			break;
		}
	}
	ibv_free_device_list(list);
	return ctx;
}

static int gs_query_port(struct ibv_context *ctx, uint8_t port, uint16_t *lid, int *state,
		int *active_mtu, int *link_layer) {
	struct ibv_port_attr a;
	memset(&a, 0, sizeof a);
	int rc = ibv_query_port(ctx, port, &a);
	if (rc != 0) {
		return rc;
	}
	*lid = a.lid;
	*state = a.state;
	*active_mtu = a.active_mtu;
	*link_layer = a.link_layer;
	return 0;
}

static int gs_query_gid(struct ibv_context *ctx, uint8_t port, int index, uint8_t *out) {
	union ibv_gid g;
	int rc = ibv_query_gid(ctx, port, index, &g);
	if (rc == 0) {
		memcpy(out, g.raw, 16);
	}
	return rc;
}

static struct ibv_mr *gs_reg_mr(struct ibv_pd *pd, uint64_t addr, size_t len) {
	return ibv_reg_mr(pd, (void *)(uintptr_t)addr, len, IBV_ACCESS_LOCAL_WRITE);
}

static struct ibv_qp *gs_create_qp(struct ibv_pd *pd, struct ibv_cq *scq, struct ibv_cq *rcq,
		uint32_t max_send, uint32_t max_recv) {
	struct ibv_qp_init_attr a;
	memset(&a, 0, sizeof a);
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = 1;
	a.cap.max_send_wr = max_send;
	a.cap.max_recv_wr = max_recv;
	a.cap.max_send_sge = 1;
	a.cap.max_recv_sge = 1;
	return ibv_create_qp(pd, &a);
}

static int gs_qp_init(struct ibv_qp *qp, uint8_t port) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = port;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

static int gs_qp_rtr(struct ibv_qp *qp, uint8_t port, int mtu, uint32_t dest_qpn, uint32_t rq_psn,
		uint16_t dlid, const uint8_t *dgid, int grh, int sgid_index) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = (enum ibv_mtu)mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12; // 0.64 ms before a sender retries a receive-not-ready
	a.ah_attr.dlid = dlid;
	a.ah_attr.sl = 0;
	a.ah_attr.src_path_bits = 0;
	a.ah_attr.port_num = port;
	if (grh) {
		a.ah_attr.is_global = 1;
		memcpy(a.ah_attr.grh.dgid.raw, dgid, 16);
		a.ah_attr.grh.sgid_index = (uint8_t)sgid_index;
		a.ah_attr.grh.hop_limit = 64;
	}
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
}

static int gs_qp_rts(struct ibv_qp *qp, uint32_t sq_psn) {
	struct ibv_qp_attr a;
	memset(&a, 0, sizeof a);
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;  // 4.096 us * 2^14 = 67 ms per transport retry
	a.retry_cnt = 7;
	a.rnr_retry = 7; // retry receive-not-ready forever: the receiver's flow control
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int gs_post_send(struct ibv_qp *qp, uint64_t id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_send_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	return ibv_post_send(qp, &wr, &bad);
}

static int gs_post_recv(struct ibv_qp *qp, uint64_t id, uint64_t addr, uint32_t len, uint32_t lkey) {
	struct ibv_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ibv_recv_wr wr, *bad = NULL;
	memset(&wr, 0, sizeof wr);
	wr.wr_id = id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	return ibv_post_recv(qp, &wr, &bad);
}

// gs_poll polls one completion: 1 (filled in), 0 (none) or < 0 (error).
static int gs_poll(struct ibv_cq *cq, uint64_t *id, int *status, uint32_t *len) {
	struct ibv_wc wc;
	int n = ibv_poll_cq(cq, 1, &wc);
	if (n == 1) {
		*id = wc.wr_id;
		*status = wc.status;
		*len = wc.byte_len;
	}
	return n;
}
*/
import "C"

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Available reports whether this build has verbs (it has: the rdma tag).
func Available() bool { return true }

// Link layers of a port (PortAttr.LinkLayer).
const (
	LinkInfiniBand = C.IBV_LINK_LAYER_INFINIBAND
	LinkEthernet   = C.IBV_LINK_LAYER_ETHERNET
)

// PortAttr is what Open learnt of the port.
type PortAttr struct {
	LID       uint16
	State     int   // ibv_port_state (4: active)
	ActiveMTU uint8 // ibv_mtu code
	LinkLayer int   // LinkInfiniBand or LinkEthernet
}

// Context is an open device port with a protection domain. Its methods
// may be called from any goroutine; Close it after every QP and MR made
// from it.
type Context struct {
	name     string
	port     uint8
	gidIndex int
	attr     PortAttr
	gid      [16]byte

	ctx *C.struct_ibv_context
	pd  *C.struct_ibv_pd

	mu     sync.Mutex
	closed bool
}

// Open opens port port (1-based) of the device named name, addressed by
// GID index gidIndex (GIDIndex tells which), and allocates a protection
// domain.
func Open(name string, port, gidIndex int) (*Context, error) {
	if port < 1 || port > 255 {
		return nil, fmt.Errorf("rdma: %s: port %d out of range", name, port)
	}
	cname := C.CString(name)
	defer C.free(unsafe.Pointer(cname))
	var cerr C.int
	ctx := C.gs_open(cname, &cerr)
	if ctx == nil {
		return nil, fmt.Errorf("rdma: open device %s: %w", name, syscall.Errno(cerr))
	}
	c := &Context{name: name, port: uint8(port), gidIndex: gidIndex, ctx: ctx}
	var lid C.uint16_t
	var state, mtu, ll C.int
	if rc := C.gs_query_port(ctx, C.uint8_t(port), &lid, &state, &mtu, &ll); rc != 0 {
		C.ibv_close_device(ctx)
		return nil, fmt.Errorf("rdma: %s: query port %d: %w", name, port, syscall.Errno(rc))
	}
	c.attr = PortAttr{LID: uint16(lid), State: int(state), ActiveMTU: uint8(mtu), LinkLayer: int(ll)}
	var gid [16]C.uint8_t
	if rc := C.gs_query_gid(ctx, C.uint8_t(port), C.int(gidIndex), &gid[0]); rc != 0 {
		C.ibv_close_device(ctx)
		return nil, fmt.Errorf("rdma: %s: port %d GID %d: %w", name, port, gidIndex, syscall.Errno(rc))
	}
	for i := range gid {
		c.gid[i] = byte(gid[i])
	}
	pd, err := C.ibv_alloc_pd(ctx)
	if pd == nil {
		C.ibv_close_device(ctx)
		return nil, fmt.Errorf("rdma: %s: protection domain: %w", name, errnoOr(err))
	}
	c.pd = pd
	return c, nil
}

// Name is the device's name.
func (c *Context) Name() string { return c.name }

// Port is what Open learnt of the port.
func (c *Context) Port() PortAttr { return c.attr }

// Close frees the protection domain and closes the device. A second Close
// does nothing.
func (c *Context) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	if rc := C.ibv_dealloc_pd(c.pd); rc != 0 {
		C.ibv_close_device(c.ctx)
		return fmt.Errorf("rdma: %s: free protection domain (queue pairs or memory regions still open?): %w", c.name, syscall.Errno(rc))
	}
	if rc := C.ibv_close_device(c.ctx); rc != 0 {
		return fmt.Errorf("rdma: close %s: %w", c.name, syscall.Errno(rc))
	}
	return nil
}

// MR is a registered memory region over mmap'd memory: not Go memory, so
// the device (and C) may keep its address, as cgo's pointer rules demand.
type MR struct {
	buf  []byte
	mr   *C.struct_ibv_mr
	lkey uint32
	once sync.Once
}

// Register maps size bytes (rounded up to pages) of anonymous memory and
// registers them for local writes (receives land there).
func (c *Context) Register(size int) (*MR, error) {
	if size <= 0 {
		return nil, fmt.Errorf("rdma: register %d bytes", size)
	}
	pg := unix.Getpagesize()
	size = (size + pg - 1) / pg * pg
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("rdma: map %d bytes: %w", size, err)
	}
	mr, cerr := C.gs_reg_mr(c.pd, C.uint64_t(uintptr(unsafe.Pointer(&buf[0]))), C.size_t(size))
	if mr == nil {
		unix.Munmap(buf)
		return nil, fmt.Errorf("rdma: %s: register %d bytes: %w", c.name, size, errnoOr(cerr))
	}
	return &MR{buf: buf, mr: mr, lkey: uint32(mr.lkey)}, nil
}

// Bytes is the region's memory; valid until Close.
func (m *MR) Bytes() []byte { return m.buf }

// Close deregisters and unmaps the region; no work request may still use
// it. A second Close does nothing.
func (m *MR) Close() error {
	var err error
	m.once.Do(func() {
		if rc := C.ibv_dereg_mr(m.mr); rc != 0 {
			err = fmt.Errorf("rdma: deregister memory: %w", syscall.Errno(rc))
			return // the device may still write there: leave it mapped
		}
		err = unix.Munmap(m.buf)
	})
	return err
}

// addr returns the address of m's bytes [off, off+n), or an error when
// they are outside m or longer than a work request carries.
func (m *MR) addr(off, n int) (C.uint64_t, error) {
	if off < 0 || n <= 0 || off > len(m.buf) || n > len(m.buf)-off || n > 1<<31 {
		return 0, fmt.Errorf("rdma: bytes [%d, %d) outside a region of %d", off, off+n, len(m.buf))
	}
	return C.uint64_t(uintptr(unsafe.Pointer(&m.buf[off]))), nil
}

// QP is a reliable-connected queue pair with its own send and receive
// completion queues. Posting and polling the send side must not run
// concurrently with itself, nor the receive side (each is one goroutine's
// job); the two sides may run concurrently.
type QP struct {
	c        *Context
	qp       *C.struct_ibv_qp
	scq, rcq *C.struct_ibv_cq
	psn      uint32
	once     sync.Once
}

// NewQP creates a queue pair taking up to sendDepth send and recvDepth
// receive work requests at a time, and moves it to INIT.
func (c *Context) NewQP(sendDepth, recvDepth int) (*QP, error) {
	if sendDepth < 1 || recvDepth < 1 || sendDepth > 1<<16 || recvDepth > 1<<16 {
		return nil, fmt.Errorf("rdma: queue depths %d/%d outside [1, 65536]", sendDepth, recvDepth)
	}
	q := &QP{c: c, psn: rand.Uint32() & 0xffffff}
	scq, err := C.ibv_create_cq(c.ctx, C.int(sendDepth), nil, nil, 0)
	if scq == nil {
		return nil, fmt.Errorf("rdma: %s: send completion queue: %w", c.name, errnoOr(err))
	}
	q.scq = scq
	rcq, err := C.ibv_create_cq(c.ctx, C.int(recvDepth), nil, nil, 0)
	if rcq == nil {
		C.ibv_destroy_cq(scq)
		return nil, fmt.Errorf("rdma: %s: receive completion queue: %w", c.name, errnoOr(err))
	}
	q.rcq = rcq
	qp, err := C.gs_create_qp(c.pd, scq, rcq, C.uint32_t(sendDepth), C.uint32_t(recvDepth))
	if qp == nil {
		C.ibv_destroy_cq(rcq)
		C.ibv_destroy_cq(scq)
		return nil, fmt.Errorf("rdma: %s: queue pair: %w", c.name, errnoOr(err))
	}
	q.qp = qp
	if rc := C.gs_qp_init(qp, C.uint8_t(c.port)); rc != 0 {
		q.Close()
		return nil, fmt.Errorf("rdma: %s: queue pair to INIT: %w", c.name, syscall.Errno(rc))
	}
	return q, nil
}

// Endpoint is what the peer needs to connect to q.
func (q *QP) Endpoint() Endpoint {
	return Endpoint{QPN: uint32(q.qp.qp_num), PSN: q.psn, LID: q.c.attr.LID, GID: q.c.gid, MTU: q.c.attr.ActiveMTU}
}

// Connect moves q to ready-to-receive, aimed at the peer's queue pair
// remote, then to ready-to-send. Post receives before the peer sends:
// until then its sends wait (receive-not-ready retries).
func (q *QP) Connect(remote Endpoint) error {
	// RoCE needs the GRH (the GID is the address); InfiniBand within a
	// subnet is routed by LID.
	grh := C.int(0)
	if q.c.attr.LinkLayer == LinkEthernet || remote.LID == 0 {
		grh = 1
	}
	mtu := PathMTU(q.Endpoint(), remote)
	if rc := C.gs_qp_rtr(q.qp, C.uint8_t(q.c.port), C.int(mtu), C.uint32_t(remote.QPN), C.uint32_t(remote.PSN),
		C.uint16_t(remote.LID), (*C.uint8_t)(unsafe.Pointer(&remote.GID[0])), grh, C.int(q.c.gidIndex)); rc != 0 {
		return fmt.Errorf("rdma: %s: queue pair to RTR (peer qp %d): %w", q.c.name, remote.QPN, syscall.Errno(rc))
	}
	if rc := C.gs_qp_rts(q.qp, C.uint32_t(q.psn)); rc != 0 {
		return fmt.Errorf("rdma: %s: queue pair to RTS: %w", q.c.name, syscall.Errno(rc))
	}
	return nil
}

// PostSend sends m's bytes [off, off+n) to the peer's next posted
// receive; the completion (PollSend) carries id. The bytes must stay
// unchanged until then.
func (q *QP) PostSend(m *MR, off, n int, id uint64) error {
	a, err := m.addr(off, n)
	if err != nil {
		return err
	}
	if rc := C.gs_post_send(q.qp, C.uint64_t(id), a, C.uint32_t(n), C.uint32_t(m.lkey)); rc != 0 {
		return fmt.Errorf("rdma: %s: post send: %w", q.c.name, syscall.Errno(rc))
	}
	return nil
}

// PostRecv offers m's bytes [off, off+n) to the peer's next send; the
// completion (PollRecv) carries id and the bytes received.
func (q *QP) PostRecv(m *MR, off, n int, id uint64) error {
	a, err := m.addr(off, n)
	if err != nil {
		return err
	}
	if rc := C.gs_post_recv(q.qp, C.uint64_t(id), a, C.uint32_t(n), C.uint32_t(m.lkey)); rc != 0 {
		return fmt.Errorf("rdma: %s: post receive: %w", q.c.name, syscall.Errno(rc))
	}
	return nil
}

// Completion is a finished work request.
type Completion struct {
	ID    uint64
	Bytes int // received bytes (receives)
}

// CompletionError is a work request that failed.
type CompletionError struct {
	Device string
	ID     uint64
	Status int // ibv_wc_status
}

func (e *CompletionError) Error() string {
	return fmt.Sprintf("rdma: %s: work request %d failed: %s", e.Device, e.ID,
		C.GoString(C.ibv_wc_status_str(C.enum_ibv_wc_status(e.Status))))
}

// PollSend returns the next send completion, false when there is none
// yet, or a *CompletionError.
func (q *QP) PollSend() (Completion, bool, error) { return q.poll(q.scq) }

// PollRecv returns the next receive completion, as PollSend.
func (q *QP) PollRecv() (Completion, bool, error) { return q.poll(q.rcq) }

func (q *QP) poll(cq *C.struct_ibv_cq) (Completion, bool, error) {
	var id C.uint64_t
	var status C.int
	var n C.uint32_t
	switch rc := C.gs_poll(cq, &id, &status, &n); {
	case rc < 0:
		return Completion{}, false, fmt.Errorf("rdma: %s: poll completion queue failed (%d)", q.c.name, int(rc))
	case rc == 0:
		return Completion{}, false, nil
	}
	if status != C.IBV_WC_SUCCESS {
		return Completion{}, false, &CompletionError{Device: q.c.name, ID: uint64(id), Status: int(status)}
	}
	return Completion{ID: uint64(id), Bytes: int(n)}, true, nil
}

// Close destroys the queue pair and its completion queues; outstanding
// work requests are flushed and dropped. A second Close does nothing.
func (q *QP) Close() error {
	var err error
	q.once.Do(func() {
		if q.qp != nil {
			if rc := C.ibv_destroy_qp(q.qp); rc != 0 {
				err = fmt.Errorf("rdma: %s: destroy queue pair: %w", q.c.name, syscall.Errno(rc))
			}
		}
		for _, cq := range []*C.struct_ibv_cq{q.rcq, q.scq} {
			if rc := C.ibv_destroy_cq(cq); rc != 0 && err == nil {
				err = fmt.Errorf("rdma: %s: destroy completion queue: %w", q.c.name, syscall.Errno(rc))
			}
		}
	})
	return err
}

// errnoOr returns the errno a failed C call left, or EIO when it left
// none.
func errnoOr(err error) error {
	if err == nil {
		return syscall.EIO
	}
	return err
}

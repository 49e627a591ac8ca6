#include "frame.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

void frame_header_pack(uint8_t out[FRAME_HEADER_SIZE], uint32_t length,
		       uint16_t nfds)
{
	out[0] = (uint8_t)length;
	out[1] = (uint8_t)(length >> 8);
	out[2] = (uint8_t)(length >> 16);
	out[3] = (uint8_t)(length >> 24);
	out[4] = (uint8_t)nfds;
	out[5] = (uint8_t)(nfds >> 8);
	out[6] = FRAME_VERSION;
	out[7] = 0;
}

static int header_parse(const uint8_t in[FRAME_HEADER_SIZE], uint32_t max_payload,
			unsigned max_fds, struct frame_header *h)
{
	h->length = (uint32_t)in[0] | (uint32_t)in[1] << 8 |
		    (uint32_t)in[2] << 16 | (uint32_t)in[3] << 24;
	h->nfds = (uint16_t)(in[4] | in[5] << 8);
	if (in[6] != FRAME_VERSION || in[7] != 0)
		return -EPROTO;
	if (h->nfds > max_fds)
		return -ETOOMANYREFS;
	if (h->length > max_payload)
		return -EMSGSIZE;
	return 0;
}

int frame_header_parse(const uint8_t in[FRAME_HEADER_SIZE],
		       uint32_t max_payload, struct frame_header *h)
{
	int r = header_parse(in, max_payload, FRAME_MAX_FDS, h);
	return r == -ETOOMANYREFS ? -EPROTO : r;
}

static unsigned reader_max_fds(const struct frame_reader *r)
{
	return r->max_fds ? r->max_fds : FRAME_MAX_FDS;
}

size_t frame_size(const ProtobufCMessage *msg)
{
	return FRAME_HEADER_SIZE + protobuf_c_message_get_packed_size(msg);
}

size_t frame_pack(const ProtobufCMessage *msg, uint16_t nfds, uint8_t *out)
{
	size_t n = protobuf_c_message_pack(msg, out + FRAME_HEADER_SIZE);
	frame_header_pack(out, (uint32_t)n, nfds);
	return FRAME_HEADER_SIZE + n;
}

int frame_send_partial(int sock, const uint8_t *buf, size_t len, size_t *off,
		       const int *fds, unsigned nfds, unsigned *fds_sent)
{
	while (*off < len) {
		union {
			struct cmsghdr align;
			char buf[CMSG_SPACE(sizeof(int) * FRAME_FDS_PER_SENDMSG)];
		} control;
		size_t chunk = len - *off;
		unsigned group = nfds - *fds_sent;
		struct msghdr mh = {0};
		struct iovec iov;

		if (group > 0) {
			if (group > FRAME_FDS_PER_SENDMSG)
				group = FRAME_FDS_PER_SENDMSG;
			/* Leave one byte for each later group of fds. */
			unsigned later = (nfds - *fds_sent - group +
					  FRAME_FDS_PER_SENDMSG - 1) /
					 FRAME_FDS_PER_SENDMSG;
			if (later > 0)
				chunk = 1;
			size_t clen = CMSG_SPACE(sizeof(int) * group);
			memset(control.buf, 0, clen);
			mh.msg_control = control.buf;
			mh.msg_controllen = clen;
			struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
			cm->cmsg_level = SOL_SOCKET;
			cm->cmsg_type = SCM_RIGHTS;
			cm->cmsg_len = CMSG_LEN(sizeof(int) * group);
			memcpy(CMSG_DATA(cm), fds + *fds_sent, sizeof(int) * group);
		}
		iov.iov_base = (void *)(buf + *off);
		iov.iov_len = chunk;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;

		ssize_t n = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EWOULDBLOCK)
				return -EAGAIN;
			return -errno;
		}
		*off += (size_t)n;
		*fds_sent += group;
	}
	return 0;
}

int frame_send(int sock, const uint8_t *buf, size_t len, const int *fds,
	       unsigned nfds)
{
	size_t off = 0;
	unsigned sent = 0;

	for (;;) {
		int r = frame_send_partial(sock, buf, len, &off, fds, nfds, &sent);
		if (r != -EAGAIN)
			return r;
		struct pollfd p = {.fd = sock, .events = POLLOUT};
		if (poll(&p, 1, -1) < 0 && errno != EINTR)
			return -errno;
	}
}

static void close_fds(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
}

/* recvmsg() into dst, queueing any fds that arrive. */
static ssize_t recv_some(struct frame_reader *r, int sock, void *dst,
			 size_t len)
{
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(int) * FRAME_FDS_PER_SENDMSG)];
	} control;
	struct iovec iov = {.iov_base = dst, .iov_len = len};
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = control.buf,
		.msg_controllen = sizeof(control.buf),
	};
	ssize_t n;

	do
		n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;

	bool bad = (mh.msg_flags & MSG_CTRUNC) != 0;
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm;
	     cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS) {
			bad = true;
			continue;
		}
		unsigned count = (unsigned)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int got[FRAME_FDS_PER_SENDMSG];
		if (count > FRAME_FDS_PER_SENDMSG)
			count = FRAME_FDS_PER_SENDMSG;
		memcpy(got, CMSG_DATA(cm), count * sizeof(int));
		for (unsigned i = 0; i < count; i++) {
			if (bad || !r->fds || r->nfds >= reader_max_fds(r)) {
				close(got[i]);
				r->too_many_fds |= !bad && r->fds;
				bad = true;
			} else {
				r->fds[r->nfds++] = got[i];
			}
		}
	}
	if (bad)
		return -EPROTO;
	return n;
}

/* recv_some() for a read that needs bytes: returns how many (> 0), or 0
 * with *end set to what the read returns: AGAIN, -errno, or at the end
 * of the stream EOF where it came between frames with no fd pending,
 * -EPROTO inside a frame. */
static ssize_t recv_needed(struct frame_reader *r, int sock, void *dst, size_t want,
			   bool between_frames, int *end)
{
	ssize_t n = recv_some(r, sock, dst, want);

	if (n > 0)
		return n;
	if (n == -EAGAIN)
		*end = FRAME_READ_AGAIN;
	else if (n < 0)
		*end = (int)n;
	else
		*end = between_frames && r->nfds == 0 ? FRAME_READ_EOF : -EPROTO;
	return 0;
}

/* header_parse() under the reader's limits. More fds than it takes is
 * -EPROTO with too_many_fds set, so that the caller can say which. */
static int reader_parse_header(struct frame_reader *r, const uint8_t *header)
{
	int err = header_parse(header, r->max_payload, reader_max_fds(r), &r->h);

	if (err == -ETOOMANYREFS) {
		r->too_many_fds = true;
		return -EPROTO;
	}
	return err;
}

/* The frame at ra_start, if the buffer holds all of it: READY, 0 (not
 * yet), or the header's error. */
static int ra_frame(struct frame_reader *r)
{
	size_t have = r->ra_end - r->ra_start;

	if (have < FRAME_HEADER_SIZE)
		return 0;
	int err = reader_parse_header(r, r->ra + r->ra_start);
	if (err < 0)
		return err;
	if (have - FRAME_HEADER_SIZE < r->h.length)
		return 0;
	/* No fd can have arrived (recv_some refuses them without r->fds):
	 * a header that announces some is a frame that lacks them. */
	if (r->nfds != r->h.nfds)
		return -EPROTO;
	r->payload = r->ra + r->ra_start + FRAME_HEADER_SIZE;
	r->payload_have = r->h.length;
	r->have_header = true;
	return FRAME_READ_READY;
}

/* Read-ahead: the next frame from the buffer, reading once more when it
 * is not all there (and the last read did not find the socket empty). */
static int ra_read(struct frame_reader *r, int sock)
{
	if (r->ra_cap < FRAME_HEADER_SIZE + (size_t)r->max_payload)
		return -ENOMEM; /* no room for the largest frame allowed */
	for (;;) {
		int f = ra_frame(r);
		if (f != 0)
			return f;
		if (r->ra_drained) {
			r->ra_drained = false;
			return FRAME_READ_AGAIN;
		}
		size_t have = r->ra_end - r->ra_start;
		/* Move a part-frame to the front, where all of it fits. */
		if (r->ra_start > 0) {
			memmove(r->ra, r->ra + r->ra_start, have);
			r->ra_start = 0;
			r->ra_end = have;
		}
		size_t want = r->ra_cap - r->ra_end;
		int end;
		ssize_t n = recv_needed(r, sock, r->ra + r->ra_end, want, have == 0, &end);
		if (n == 0)
			return end;
		r->ra_end += (size_t)n;
		/* Less than asked: the socket had no more. A read now would
		 * only say EAGAIN; the caller's poll() says when to read. */
		r->ra_drained = (size_t)n < want;
	}
}

int frame_reader_read(struct frame_reader *r, int sock)
{
	if (r->ra)
		return ra_read(r, sock);
	while (!r->have_header) {
		int end;
		ssize_t n = recv_needed(r, sock, r->header + r->header_have,
					FRAME_HEADER_SIZE - r->header_have, r->header_have == 0,
					&end);
		if (n == 0)
			return end;
		r->header_have += (size_t)n;
		if (r->header_have < FRAME_HEADER_SIZE)
			continue;
		int err = reader_parse_header(r, r->header);
		if (err < 0)
			return err;
		r->have_header = true;
		r->payload_have = 0;
	}

	while (r->payload_have < r->h.length) {
		size_t want = r->h.length - r->payload_have;
		/* Grow with what arrives, 64 KiB at a time, not with what the
		 * header claims: a peer that announces 8 MiB and sends 10
		 * bytes costs 64 KiB. */
		if (want > 64 * 1024)
			want = 64 * 1024;
		if (r->payload_have + want > r->payload_cap &&
		    !(r->grow && r->grow(r, r->payload_have + want)))
			return -ENOMEM;
		int end;
		ssize_t n = recv_needed(r, sock, r->payload + r->payload_have, want, false, &end);
		if (n == 0)
			return end;
		r->payload_have += (size_t)n;
	}

	/* Reads stop at the frame's end, so every fd received is its own. */
	if (r->nfds != r->h.nfds)
		return -EPROTO;
	return FRAME_READ_READY;
}

void frame_reader_next(struct frame_reader *r)
{
	if (r->ra && r->have_header) {
		r->ra_start += FRAME_HEADER_SIZE + r->h.length;
		if (r->ra_start == r->ra_end)
			r->ra_start = r->ra_end = 0;
		r->payload = NULL;
	}
	frame_reader_drop_fds(r);
	r->header_have = 0;
	r->have_header = false;
	r->too_many_fds = false;
	r->payload_have = 0;
}

void frame_reader_drop_fds(struct frame_reader *r)
{
	close_fds(r->fds, r->nfds);
	r->nfds = 0;
}

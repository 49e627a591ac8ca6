/*
 * Frame queues (outq.h).
 *
 * Processes: the listener and the launcher.
 */
#include "outq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "frame.h"
#include "util.h"

struct outq_item {
	struct outq_item *next;
	size_t len;
	size_t off;
	unsigned nfds;
	unsigned fds_sent;
	int *fds;
	uint8_t data[];
};

/* Keep the queue's count, and the shared one, in step. */
static void account(struct outq *q, size_t added, size_t removed)
{
	q->bytes = q->bytes + added - removed;
	if (q->total)
		*q->total = *q->total + added - removed;
}

int outq_push(struct outq *q, const ProtobufCMessage *msg, const int *fds,
	      unsigned nfds)
{
	size_t len = frame_size(msg);
	struct outq_item *it = malloc(sizeof(*it) + len);
	int *copy = nfds ? malloc(nfds * sizeof(int)) : NULL;

	if (!it || (nfds && !copy)) {
		free(it);
		free(copy);
		close_fd_list(fds, nfds);
		return -ENOMEM;
	}
	if (nfds)
		memcpy(copy, fds, nfds * sizeof(int));
	*it = (struct outq_item){.len = len, .nfds = nfds, .fds = copy};
	frame_pack(msg, (uint16_t)nfds, it->data);
	if (q->tail)
		q->tail->next = it;
	else
		q->head = it;
	q->tail = it;
	account(q, len, 0);
	return 0;
}

static void drop_head(struct outq *q)
{
	struct outq_item *it = q->head;

	q->head = it->next;
	if (!q->head)
		q->tail = NULL;
	account(q, 0, it->len - it->off);
	close_fd_list(it->fds, it->nfds);
	free(it->fds);
	free(it);
}

/* How many queued frames one sendmsg() gathers. */
#define OUTQ_GATHER 16

/* Write the frames at the head that carry no fds with one sendmsg():
 * a job's Output and Exit, or a Release and an audit line, wake their
 * reader once. Returns 0 (some or all written), or -errno. */
static int flush_plain(struct outq *q, int sock)
{
	struct iovec iov[OUTQ_GATHER];
	int n = 0;

	for (struct outq_item *it = q->head; it && !it->nfds && n < OUTQ_GATHER; it = it->next)
		iov[n++] = (struct iovec){.iov_base = it->data + it->off, .iov_len = it->len - it->off};
	struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)n};
	ssize_t sent;
	do
		sent = sendmsg(sock, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (sent < 0 && errno == EINTR);
	if (sent < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	for (size_t left = (size_t)sent; left > 0;) {
		struct outq_item *it = q->head;
		size_t take = it->len - it->off < left ? it->len - it->off : left;
		it->off += take;
		left -= take;
		account(q, 0, take);
		if (it->off == it->len)
			drop_head(q);
	}
	return 0;
}

int outq_flush(struct outq *q, int sock)
{
	while (q->head) {
		struct outq_item *it = q->head;
		if (!it->nfds) {
			int r = flush_plain(q, sock);
			if (r < 0)
				return r;
			continue;
		}
		size_t before = it->off;
		int r = frame_send_partial(sock, it->data, it->len, &it->off,
					   it->fds, it->nfds, &it->fds_sent);
		account(q, 0, it->off - before);
		if (r < 0)
			return r;
		drop_head(q);
	}
	return 0;
}

void outq_clear(struct outq *q)
{
	while (q->head)
		drop_head(q);
}

bool frame_grow_heap(struct frame_reader *r, size_t need)
{
	size_t cap = r->payload_cap ? r->payload_cap : 4096;

	while (cap < need)
		cap *= 2;
	uint8_t *p = realloc(r->payload, cap);
	if (!p)
		return false;
	r->payload = p;
	r->payload_cap = cap;
	return true;
}

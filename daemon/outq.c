#include "outq.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "frame.h"

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

static void close_all(int *fds, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		close(fds[i]);
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
		close_all((int *)fds, nfds);
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
	close_all(it->fds, it->nfds);
	free(it->fds);
	free(it);
}

int outq_flush(struct outq *q, int sock)
{
	while (q->head) {
		struct outq_item *it = q->head;
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

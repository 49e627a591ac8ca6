/*
 * The event loop (event.h).
 *
 * Process: the listener (its one loop).
 */
#include "event.h"

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "util.h"

int event_loop_init(struct event_loop *loop)
{
	*loop = (struct event_loop){0};
	loop->epfd = epoll_create1(EPOLL_CLOEXEC);
	return loop->epfd < 0 ? -errno : 0;
}

static void run_releases(struct event_loop *loop)
{
	while (loop->releases) {
		struct release *r = loop->releases;
		loop->releases = r->next;
		r->free_fn(r->obj);
		free(r);
	}
}

void event_loop_close(struct event_loop *loop)
{
	run_releases(loop);
	if (loop->epfd >= 0)
		close(loop->epfd);
	loop->epfd = -1;
}

int event_add(struct event_loop *loop, struct event_source *src, int fd,
	      uint32_t mask, event_fn fn, void *data)
{
	struct epoll_event ev = {.events = mask, .data.ptr = src};

	src->fd = fd;
	src->mask = mask;
	src->fn = fn;
	src->data = data;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		src->fd = -1;
		return -errno;
	}
	return 0;
}

int event_modify(struct event_loop *loop, struct event_source *src,
		 uint32_t mask)
{
	struct epoll_event ev = {.events = mask, .data.ptr = src};

	if (src->fd < 0 || src->mask == mask)
		return 0;
	if (epoll_ctl(loop->epfd, EPOLL_CTL_MOD, src->fd, &ev) < 0)
		return -errno;
	src->mask = mask;
	return 0;
}

void event_del(struct event_loop *loop, struct event_source *src)
{
	if (src->fd < 0)
		return;
	epoll_ctl(loop->epfd, EPOLL_CTL_DEL, src->fd, NULL);
	src->fd = -1;
	src->fn = NULL;
}

void timer_cancel(struct event_loop *loop, struct timer *t)
{
	if (!t->armed)
		return;
	(void)loop; /* the entry unlinks itself, without the head */
	LIST_REMOVE(t, link);
	t->armed = false;
}

void timer_arm(struct event_loop *loop, struct timer *t, int64_t delay_ms,
	       timer_fn fn, void *data)
{
	timer_cancel(loop, t);
	t->deadline_ms = monotonic_ms() + delay_ms;
	t->fn = fn;
	t->data = data;
	t->armed = true;

	/* Sorted insert, after the timers due no later: the timers are few
	 * (one per connection or job). */
	struct timer *before = NULL;
	for (struct timer *at = LIST_FIRST(&loop->timers);
	     at && at->deadline_ms <= t->deadline_ms; at = LIST_NEXT(at, link))
		before = at;
	if (before)
		LIST_INSERT_AFTER(before, t, link);
	else
		LIST_INSERT_HEAD(&loop->timers, t, link);
}

int event_release(struct event_loop *loop, void *obj, void (*free_fn)(void *))
{
	struct release *r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->obj = obj;
	r->free_fn = free_fn;
	r->next = loop->releases;
	loop->releases = r;
	return 0;
}

void event_loop_stop(struct event_loop *loop)
{
	loop->stop = true;
}

static void run_timers(struct event_loop *loop)
{
	int64_t now = monotonic_ms();

	struct timer *t;
	while ((t = LIST_FIRST(&loop->timers)) && t->deadline_ms <= now) {
		timer_cancel(loop, t);
		t->fn(loop, t->data);
	}
}

void event_loop_before_sleep(struct event_loop *loop, void (*fn)(void *data), void *data)
{
	loop->before_sleep = fn;
	loop->before_sleep_data = data;
}

int event_loop_run(struct event_loop *loop)
{
	struct epoll_event events[EVENT_BATCH];

	while (!loop->stop) {
		int timeout = -1;
		if (loop->before_sleep) {
			loop->before_sleep(loop->before_sleep_data);
			/* It may have stopped the loop (a write that failed). */
			if (loop->stop)
				break;
		}
		if (!LIST_EMPTY(&loop->timers)) {
			int64_t wait = LIST_FIRST(&loop->timers)->deadline_ms - monotonic_ms();
			timeout = wait < 0 ? 0 : wait > 60000 ? 60000 : (int)wait;
		}
		int n = epoll_wait(loop->epfd, events, EVENT_BATCH, timeout);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (int i = 0; i < n && !loop->stop; i++) {
			struct event_source *src = events[i].data.ptr;
			/* Deleted by an earlier handler of this batch. */
			if (src->fd < 0 || !src->fn)
				continue;
			src->fn(loop, events[i].events, src->data);
		}
		run_timers(loop);
		run_releases(loop);
	}
	run_releases(loop);
	return 0;
}

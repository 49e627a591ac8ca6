#include "arena.h"

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * Under AddressSanitizer the arena keeps what malloc would give the
 * sanitizer: each allocation is followed by a poisoned gap, and what
 * lies ahead of the allocations is poisoned too, so that reading past
 * the end of a decoded field is reported as it would be on the heap (the
 * fuzzer relies on it). The gaps come on top of cap, so that a message
 * fits the same arena with or without the sanitizer. A region is
 * poisoned a step ahead of the allocations, not whole at once: that
 * writes the sanitizer's shadow of every byte, and most of a large
 * region is never used.
 */
#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif

#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define REDZONE 16
#define POISON_STEP (64u << 10)

/* Poison what lies ahead of the allocations, up to end and a step on. */
static void poison_ahead(struct arena_region *r, size_t end)
{
	while (r->poisoned < end + POISON_STEP && r->poisoned < r->len) {
		size_t n = r->len - r->poisoned;
		if (n > POISON_STEP)
			n = POISON_STEP;
		ASAN_POISON_MEMORY_REGION(r->base + r->poisoned, n);
		r->poisoned += n;
	}
}

static void unpoison(const void *p, size_t n)
{
	ASAN_UNPOISON_MEMORY_REGION(p, n);
}
#else
#define REDZONE 0

static void poison_ahead(struct arena_region *r, size_t end)
{
	(void)r;
	(void)end;
}

static void unpoison(const void *p, size_t n)
{
	(void)p;
	(void)n;
}
#endif

#define ALIGN _Alignof(max_align_t)

static size_t align_up(size_t n, size_t to)
{
	return (n + to - 1) & ~(to - 1);
}

size_t arena_capacity(size_t len)
{
	if (len > (SIZE_MAX - ARENA_BASE) / ARENA_PER_BYTE)
		return SIZE_MAX;
	return len * ARENA_PER_BYTE + ARENA_BASE;
}

static void *pb_alloc(void *data, size_t n)
{
	return arena_alloc(data, n);
}

/* Everything goes at once, with the arena. */
static void pb_free(void *data, void *p)
{
	(void)data;
	(void)p;
}

int arena_init(struct arena *a, size_t cap)
{
	*a = (struct arena){.cap = cap};
	a->allocator = (ProtobufCAllocator){pb_alloc, pb_free, a};
	if (cap > SIZE_MAX / 4)
		return -ENOMEM;
	/* From the heap: warm memory, reused from one message to the next. */
	a->small.base = malloc(ARENA_SMALL);
	if (!a->small.base)
		return -ENOMEM;
	a->small.len = ARENA_SMALL;
	poison_ahead(&a->small, 0);
	return 0;
}

/* Map the large region: room for the rest of what allocations may take
 * (and, with the sanitizer, for the gaps: each allocation takes at least
 * ALIGN, its gap at most as much again). Only what is written takes
 * memory; no swap is reserved for the rest. */
static bool map_large(struct arena *a)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t room = a->cap - a->used;
	size_t len = align_up(REDZONE ? room / ALIGN * (ALIGN + REDZONE) : room, page);

	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		a->nomem = true;
		return false;
	}
	a->large = (struct arena_region){.base = p, .len = len};
	poison_ahead(&a->large, 0);
	return true;
}

/* size bytes (and a gap) from r, or NULL if it has no room. */
static void *bump(struct arena_region *r, size_t size)
{
	if (!r->base || size + REDZONE > r->len - r->top)
		return NULL;
	uint8_t *p = r->base + r->top;
	r->top += size + REDZONE;
	poison_ahead(r, r->top);
	return p;
}

void *arena_alloc(struct arena *a, size_t n)
{
	size_t size = align_up(n ? n : 1, ALIGN);

	if (n > a->cap || size > a->cap - a->used) {
		a->exhausted = true;
		return NULL;
	}
	void *p = bump(&a->small, size);
	if (!p && !a->large.base && !map_large(a))
		return NULL;
	if (!p)
		p = bump(&a->large, size); /* has room for all cap allows */
	a->used += size;
	unpoison(p, n);
	return p;
}

void arena_release(struct arena *a)
{
	/* The sanitizer's shadow outlives the memory: leave it clean for
	 * whatever comes to live there next. */
	if (a->small.base) {
		unpoison(a->small.base, a->small.poisoned);
		free(a->small.base);
	}
	if (a->large.base) {
		unpoison(a->large.base, a->large.poisoned);
		munmap(a->large.base, a->large.len);
	}
	*a = (struct arena){0};
}

int arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *desc,
		 size_t len, const uint8_t *data, ProtobufCMessage **out)
{
	int r = arena_init(a, arena_capacity(len));

	*out = NULL;
	if (r < 0) {
		arena_release(a);
		return r;
	}
	ProtobufCMessage *m = protobuf_c_message_unpack(desc, &a->allocator, len, data);
	if (!m) {
		r = a->nomem ? -ENOMEM : a->exhausted ? -EMSGSIZE : -EBADMSG;
		arena_release(a);
		return r;
	}
	*out = m;
	return 0;
}

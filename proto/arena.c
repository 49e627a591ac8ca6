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

/* 16 bytes per array for the alignment of each lifted field's array, as
 * many as a message type may have fields to lift. */
#define ARRAYS_SLACK (64 * ALIGN)

/* The room decoding takes: the copy without the entries (if any), what
 * protobuf-c may allocate for it, and 16 bytes per entry (arena.h). */
static size_t decode_room(size_t kept, size_t entries)
{
	size_t copy = entries ? align_up(kept, ALIGN) : 0;
	return copy + kept + ARENA_BASE + entries * sizeof(ProtobufCBinaryData) + ARRAYS_SLACK;
}

size_t arena_capacity(size_t len)
{
	size_t entries = len / 2 < ARENA_MAX_ENTRIES ? len / 2 : ARENA_MAX_ENTRIES;

	if (len > SIZE_MAX / 4)
		return SIZE_MAX;
	return decode_room(len, entries);
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

/* ---- The entries protobuf-c does not see (arena.h) ---- */

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

/* One field on the wire. */
struct wire_field {
	uint32_t number;
	unsigned type;
	const uint8_t *start;     /* its tag */
	const uint8_t *after_tag;
	const uint8_t *value;     /* LEN: its bytes, after the length */
	size_t value_len;
	const uint8_t *end;       /* where the next field starts */
};

/* A varint of at most max bytes at *p, as protobuf-c reads it. */
static bool read_varint(const uint8_t **p, const uint8_t *end, unsigned max, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned i = 0; i < max && *p < end; i++) {
		uint8_t b = *(*p)++;
		x |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

static uint8_t *write_varint(uint8_t *out, uint64_t v)
{
	while (v >= 0x80) {
		*out++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*out++ = (uint8_t)v;
	return out;
}

/* The field at p, before end: false if it is not well formed (or a
 * group, which none of our messages has). */
static bool next_field(const uint8_t *p, const uint8_t *end, struct wire_field *f)
{
	uint64_t tag, n;

	f->start = p;
	if (!read_varint(&p, end, 5, &tag) || tag >> 3 == 0 || tag >> 3 > 0x1fffffff)
		return false;
	f->number = (uint32_t)(tag >> 3);
	f->type = (unsigned)(tag & 7);
	f->after_tag = f->value = p;
	f->value_len = 0;
	switch (f->type) {
	case WIRE_VARINT:
		if (!read_varint(&p, end, 10, &n))
			return false;
		break;
	case WIRE_I64:
	case WIRE_I32: {
		size_t size = f->type == WIRE_I64 ? 8 : 4;
		if ((size_t)(end - p) < size)
			return false;
		p += size;
		break;
	}
	case WIRE_LEN:
		if (!read_varint(&p, end, 5, &n) || n > (uint64_t)(end - p))
			return false;
		f->value = p;
		f->value_len = (size_t)n;
		p += n;
		break;
	default:
		return false;
	}
	f->end = p;
	return true;
}

/* An entry protobuf-c does not see: of a repeated bytes field. */
static bool lifted(const ProtobufCFieldDescriptor *fd)
{
	return fd && fd->label == PROTOBUF_C_LABEL_REPEATED && fd->type == PROTOBUF_C_TYPE_BYTES;
}

/* A sub-message, not repeated, whose own entries are lifted. */
static bool lifts_inside(const ProtobufCFieldDescriptor *fd)
{
	if (!fd || fd->type != PROTOBUF_C_TYPE_MESSAGE || fd->label == PROTOBUF_C_LABEL_REPEATED)
		return false;
	const ProtobufCMessageDescriptor *d = fd->descriptor;
	for (unsigned i = 0; i < d->n_fields; i++)
		if (lifted(&d->fields[i]))
			return true;
	return false;
}

/* What the first walk found. */
struct lift_count {
	size_t entries;
	size_t exec_bytes;
};

#define NOT_WELL_FORMED SIZE_MAX

/*
 * The message at (p, len), of type desc, without its lifted entries:
 * returns its size, and writes it to out unless out is NULL; counts the
 * entries in count unless that is NULL. The top message's sub-messages
 * are walked too (top), each at most once: protobuf-c would merge two,
 * and our own encoders never send them so. Returns NOT_WELL_FORMED for
 * a message that is not.
 */
static size_t strip(const ProtobufCMessageDescriptor *desc, const uint8_t *p, size_t len,
		    bool top, uint8_t *out, struct lift_count *count)
{
	const uint8_t *end = len ? p + len : p; /* an empty payload may be NULL */
	uint64_t seen = 0;
	size_t n = 0;

	while (p < end) {
		struct wire_field f;
		if (!next_field(p, end, &f))
			return NOT_WELL_FORMED;
		const ProtobufCFieldDescriptor *fd =
			protobuf_c_message_descriptor_get_field(desc, f.number);
		size_t index = fd ? (size_t)(fd - desc->fields) : 0;
		if (lifted(fd)) {
			if (f.type != WIRE_LEN)
				return NOT_WELL_FORMED;
			if (count) {
				count->entries++;
				count->exec_bytes += FRAME_EXEC_COST(f.value_len);
			}
		} else if (top && lifts_inside(fd) && f.type == WIRE_LEN && index < 64) {
			if (seen & (UINT64_C(1) << index))
				return NOT_WELL_FORMED;
			seen |= UINT64_C(1) << index;
			size_t inner = strip(fd->descriptor, f.value, f.value_len, false, NULL, count);
			if (inner == NOT_WELL_FORMED)
				return NOT_WELL_FORMED;
			size_t tag = (size_t)(f.after_tag - f.start);
			if (out) {
				memcpy(out + n, f.start, tag);
				uint8_t *at = write_varint(out + n + tag, inner);
				strip(fd->descriptor, f.value, f.value_len, false, at, NULL);
			}
			n += tag + varint_len(inner) + inner;
		} else {
			if (out)
				memcpy(out + n, f.start, (size_t)(f.end - f.start));
			n += (size_t)(f.end - f.start);
		}
		p = f.end;
	}
	return n;
}

/* Give field fd of m its entries, as they are on the wire (p, len) of
 * m: pointing into it. Returns false when the arena has no room. */
static bool fill_entries(struct arena *a, const ProtobufCFieldDescriptor *fd,
			 ProtobufCMessage *m, const uint8_t *p, size_t len)
{
	const uint8_t *end = p + len;
	struct wire_field f;
	size_t n = 0;

	for (const uint8_t *q = p; q < end && next_field(q, end, &f); q = f.end)
		n += f.number == fd->id;
	if (!n)
		return true;
	ProtobufCBinaryData *v = arena_alloc(a, n * sizeof(*v));
	if (!v)
		return false;
	size_t k = 0;
	for (const uint8_t *q = p; q < end && next_field(q, end, &f); q = f.end)
		if (f.number == fd->id)
			v[k++] = (ProtobufCBinaryData){
				f.value_len, f.value_len ? (uint8_t *)f.value : NULL};
	*(size_t *)((char *)m + fd->quantifier_offset) = n;
	*(ProtobufCBinaryData **)((char *)m + fd->offset) = v;
	return true;
}

/* The sub-message of field fd of m, if m has it. */
static ProtobufCMessage *sub_message(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *fd)
{
	if ((fd->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
	    *(const uint32_t *)((const char *)m + fd->quantifier_offset) != fd->id)
		return NULL;
	return *(ProtobufCMessage *const *)((const char *)m + fd->offset);
}

/* The value of field number on the wire (p, len): the one there is. */
static bool find_field(const uint8_t *p, size_t len, uint32_t number, struct wire_field *f)
{
	const uint8_t *end = p + len;

	for (const uint8_t *q = p; q < end && next_field(q, end, f); q = f->end)
		if (f->number == number)
			return true;
	return false;
}

/* Give m, decoded from the copy, the entries of the original (p, len). */
static bool fill(struct arena *a, const ProtobufCMessageDescriptor *desc, ProtobufCMessage *m,
		 const uint8_t *p, size_t len, bool top)
{
	for (unsigned i = 0; i < desc->n_fields; i++) {
		const ProtobufCFieldDescriptor *fd = &desc->fields[i];
		struct wire_field f;
		ProtobufCMessage *sub;

		if (lifted(fd)) {
			if (!fill_entries(a, fd, m, p, len))
				return false;
		} else if (top && lifts_inside(fd) && (sub = sub_message(m, fd)) &&
			   find_field(p, len, fd->id, &f)) {
			if (!fill(a, fd->descriptor, sub, f.value, f.value_len, false))
				return false;
		}
	}
	return true;
}

/* Decoding failed: nothing held, the figures kept for the message. */
static int unpack_failed(struct arena *a, int err)
{
	size_t cap = a->cap, exec_bytes = a->exec_bytes;

	if (err == 0)
		err = a->nomem ? -ENOMEM : a->exhausted ? -EMSGSIZE : -EBADMSG;
	arena_release(a);
	a->cap = cap;
	a->exec_bytes = exec_bytes;
	return err;
}

int arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *desc,
		 size_t len, const uint8_t *data, ProtobufCMessage **out)
{
	struct lift_count count = {0};
	size_t kept = strip(desc, data, len, true, NULL, &count);

	*out = NULL;
	*a = (struct arena){0};
	if (kept == NOT_WELL_FORMED)
		return -EBADMSG;
	a->cap = decode_room(kept, count.entries);
	a->exec_bytes = count.exec_bytes;
	if (count.exec_bytes > FRAME_MAX_EXEC_BYTES)
		return unpack_failed(a, -E2BIG);
	int r = arena_init(a, decode_room(kept, count.entries));
	a->exec_bytes = count.exec_bytes;
	if (r < 0)
		return unpack_failed(a, r);
	const uint8_t *wire = data;
	if (count.entries) {
		uint8_t *copy = arena_alloc(a, kept);
		if (!copy)
			return unpack_failed(a, 0);
		strip(desc, data, len, true, copy, NULL);
		wire = copy;
	}
	ProtobufCMessage *m = protobuf_c_message_unpack(desc, &a->allocator,
							count.entries ? kept : len, wire);
	if (!m || (count.entries && !fill(a, desc, m, data, len, true)))
		return unpack_failed(a, 0);
	*out = m;
	return 0;
}

/*
 * Arenas: the memory one decoded message lives in, bounded by its size.
 *
 * protobuf-c's unpack allocates per field on the wire: a 32-byte scan
 * record for each (in slabs that double), a 16-byte ProtobufCBinaryData
 * for each entry of a repeated bytes field, then a copy of its bytes. An
 * entry of argv costs 2 bytes on the wire and about 50 in memory: an
 * 8 MiB Request of 4 million empty entries once took 200 MB to decode.
 *
 * Decoded into an arena, a message costs at most arena_capacity() of its
 * payload's length. protobuf-c's allocations bump a pointer through the
 * arena's memory and fail once they would take more, which makes the
 * unpack fail; free does nothing; everything goes at once. The memory is
 * one small region from the heap, where most messages fit and which is
 * warm from the last one, then, only for a message that needs more, one
 * mapping with room for the rest of the capacity, of which only the pages
 * written take memory. (One mapping of the whole capacity for every
 * message cost 200 us each: the kernel zeroes a huge page for the first
 * byte written, and tears the mapping down again.)
 */
#ifndef TOOLRUN_ARENA_H
#define TOOLRUN_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/*
 * What decoding may cost: ARENA_PER_BYTE bytes of memory for each byte of
 * payload, plus ARENA_BASE. Measured with protobuf-c 1.4 (test-arena.c
 * holds these cases): a Request with 100 environment variables takes 2.3
 * to 3.5 per byte; argv of 100,000 file names of 8 to 20 bytes, as
 * `find -exec +` makes, 7.4 to 4.1 (most of it the scan records); 4
 * million empty entries, 24. The base is what the entries' fixed cost
 * comes to when execve's own limit bounds their number: under the
 * default 8 MiB stack limit it takes 2 MiB of strings and pointers, so
 * at most 233,000 entries, whose decoding exceeds 8 per byte by 10 MB at
 * most. Any argv and environment that execve takes there decodes; with a
 * larger stack limit (execve then takes up to 6 MiB), entries of 10 bytes
 * or more still always do, whatever their number.
 */
#define ARENA_PER_BYTE 8
#define ARENA_BASE (16u << 20)

/* The heap region: enough for a Request with a hundred variables. */
#define ARENA_SMALL (64u << 10)

struct arena_region {
	uint8_t *base;
	size_t len;
	size_t top;       /* where the next allocation may start */
	size_t poisoned;  /* under AddressSanitizer: how far it is poisoned */
};

struct arena {
	struct arena_region small; /* from the heap */
	struct arena_region large; /* mapped once small is full */
	size_t cap;       /* what allocations may take */
	size_t used;      /* what they took */
	bool exhausted;   /* an allocation did not fit in cap */
	bool nomem;       /* the large region could not be mapped */
	ProtobufCAllocator allocator; /* for protobuf-c: arena_alloc, no free */
};

/* The memory decoding a payload of len bytes may take. */
size_t arena_capacity(size_t len);

/* Set up an arena that allocations may take cap bytes of. Returns 0 or
 * -ENOMEM; release it in either case. */
int arena_init(struct arena *a, size_t cap);

/* n bytes aligned for any type, or NULL once the arena is used up. */
void *arena_alloc(struct arena *a, size_t n);

/* Free it: everything allocated from it goes. Safe to call twice. */
void arena_release(struct arena *a);

/*
 * Decode len bytes at data as a message of type desc into a new arena
 * with room for arena_capacity(len). Returns 0 with *out in a (release
 * it when done with the message), or, with nothing held: -EMSGSIZE
 * (decoding needs more than that room: too many fields for the size),
 * -EBADMSG (not such a message), -ENOMEM (no memory to be had).
 */
int arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *desc,
		 size_t len, const uint8_t *data, ProtobufCMessage **out);

#endif

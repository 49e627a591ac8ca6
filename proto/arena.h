/*
 * Arenas: the memory one decoded message lives in, bounded by its size.
 *
 * protobuf-c's unpack allocates per field on the wire: a 32-byte scan
 * record for each (in slabs that double, so up to 64), a 16-byte
 * ProtobufCBinaryData for each entry of a repeated bytes field, then a
 * copy of its bytes (16 at least, aligned here). An entry of argv costs 2
 * bytes on the wire and about 80 in memory: an 8 MiB Request of 4 million
 * empty entries took 200 MB to decode, and 76 MB within the arena's
 * earlier bound (8 per byte plus 16 MiB).
 *
 * So arena_unpack() does not let protobuf-c see the entries of repeated
 * bytes fields (argv, envp) of a message or of its sub-messages that are
 * not repeated (ClientMessage.request, ToLauncher.spawn). A first walk
 * over the wire, which allocates nothing, finds them and adds up what
 * execve would make of them; past FRAME_MAX_EXEC_BYTES (frame.h), the
 * message is refused before anything is allocated: no program could be
 * run with it. Otherwise protobuf-c decodes a copy of the message without
 * them, and each entry becomes a ProtobufCBinaryData that points into the
 * payload itself: 16 bytes, and never a scan record or a copy.
 *
 * What decoding may then cost is fixed before it starts:
 *   the copy without the entries (when there are entries), K bytes;
 *   protobuf-c's own allocations for it: K again (its copies of bytes and
 *   strings), plus ARENA_BASE for its structures (messages, scan
 *   records, packed repeated numbers: a few KiB for what our clients send,
 *   65,536 groups take 256 KiB);
 *   16 bytes per entry, at most ARENA_MAX_ENTRIES of them.
 * A message whose other fields need more (thousands of tiny fields, a
 * field repeated that is not a repeated one) fails with -EMSGSIZE.
 *
 * protobuf-c's allocations bump a pointer through the arena's memory and
 * fail once they would take more, which makes the unpack fail; free does
 * nothing; everything goes at once. The memory is one small region from
 * the heap, where most messages fit and which is warm from the last one,
 * then, only for a message that needs more, one mapping with room for the
 * rest of the capacity, of which only the pages written take memory. (One
 * mapping of the whole capacity for every message cost 200 us each: the
 * kernel zeroes a huge page for the first byte written, and tears the
 * mapping down again.)
 */
#ifndef TOOLRUN_ARENA_H
#define TOOLRUN_ARENA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

#include "frame.h"

/* protobuf-c's fixed cost, besides its copies of the bytes it decodes. */
#define ARENA_BASE (1u << 20)
/* The most entries of argv and envp a message may have: each costs
 * execve at least 9 bytes (an empty string's NUL, its pointer). */
#define ARENA_MAX_ENTRIES (FRAME_MAX_EXEC_BYTES / FRAME_EXEC_COST(0))

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
	/* Set by arena_unpack, and kept when it fails: what execve would
	 * make of the entries of argv and envp (FRAME_EXEC_COST). */
	size_t exec_bytes;
	ProtobufCAllocator allocator; /* for protobuf-c: arena_alloc, no free */
};

/* The most that decoding a payload of len bytes may take (above). */
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
 * with the room above. Returns 0 with *out in a (release it when done
 * with the message; the entries of argv and envp point into data, which
 * must outlive it), or, with nothing held (a->cap and a->exec_bytes still
 * say what was asked): -E2BIG (argv and envp hold more than any execve
 * takes), -EMSGSIZE (decoding needs more than that room: too many fields
 * for the size), -EBADMSG (not such a message), -ENOMEM (no memory to be
 * had).
 */
int arena_unpack(struct arena *a, const ProtobufCMessageDescriptor *desc,
		 size_t len, const uint8_t *data, ProtobufCMessage **out);

#endif

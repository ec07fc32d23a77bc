/* aligned(N) on a type, on a typedef (raising and lowering the
   alignment, as gcc allows there) and on a field's type, as
   linux/types.h's __aligned_u64 expands, and packed on a typedef'd struct. */
typedef int __attribute__((aligned(8))) int_at8;
typedef long long_at4 __attribute__((aligned(4)));
typedef struct { int a; char b; } __attribute__((packed)) packed_pair;
struct wide { char c; unsigned long __attribute__((aligned(16))) x; };
struct raised { char c; int_at8 x; };
struct lowered { char c; long_at4 x; };
struct holder { char c; packed_pair p; short t; };
/* In a field, aligned(N) on the type only raises the alignment. */
struct kept { char c; long __attribute__((aligned(4))) x; };

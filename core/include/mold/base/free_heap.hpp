#pragma once
/// Gives the C library's free heap pages back to the system. glibc keeps
/// freed blocks below its mmap threshold (which rises to 32 MiB as large
/// blocks are freed) in the process's heaps, and a thread's heap keeps its
/// free top until more than the trim threshold (twice the mmap threshold,
/// 64 MiB: a thread heap's whole size) is free there, so never: a parked
/// component's weights, or a server's 50 MB request bodies parsed into JSON,
/// would stay in the resident set. Torch-free; a no-op off glibc.

namespace mold {

/// Every arena's free blocks go back (malloc_trim(0)), and so does the free
/// top of the calling thread's heap, which malloc_trim leaves. The memory
/// stays mapped and reads as zero. Costs a walk over the free blocks: call it
/// after something large was freed, on the thread that freed it, not per
/// allocation.
void give_back_free_heap();

}  // namespace mold

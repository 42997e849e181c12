#pragma once
/// A component's repeated blocks as its weight files store them, for a
/// BlockWindow (mold/tensor/block_window.hpp): for each block, the stored
/// tensors its layout makes that block's parameters from (a fused tensor that
/// several parameters are split from, once), with the fp8 scale a weight
/// carries, and where their bytes lie in their files. Torch-free.

#include <string>
#include <vector>

#include "mold/catalog/weight_layout.hpp"
#include "mold/tensor/block_window.hpp"
#include "mold/tensor/tensor_listing.hpp"

namespace mold {

/// The blocks whose parameters' names start with each of `block_prefixes`
/// ("layers.0.", "layers.1.", ...), in that order. Throws InvalidArgument
/// naming a prefix no parameter of the mapping has, or one whose stored
/// tensors another block's parameters are made from too (the blocks would
/// not be independent), and Error naming the file when the listing does not
/// know where its data section starts (a listing made without the file's
/// header).
std::vector<StreamedBlock> streamed_blocks(
    const TensorListing& listing, const LayoutMapping& mapping,
    const std::vector<std::string>& block_prefixes);

}  // namespace mold

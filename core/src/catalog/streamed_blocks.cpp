#include "mold/catalog/streamed_blocks.hpp"

#include <fmt/format.h>

#include <map>
#include <set>

#include "mold/base/error.hpp"
#include "mold/base/text.hpp"

namespace mold {

namespace {

StreamedRange range_of(const TensorListing& listing,
                       const StoredTensor& stored) {
  const auto start = listing.data_start(stored.file);
  const std::string file = listing.files().at(stored.file).string();
  if (!start)
    throw Error(fmt::format(
        "{}: where its data starts is not known (its listing was made "
        "without the file's header), so tensor '{}' cannot be streamed",
        file, stored.name));
  return {file, stored.name, *start + stored.offset, stored.bytes};
}

}  // namespace

std::vector<StreamedBlock> streamed_blocks(
    const TensorListing& listing, const LayoutMapping& mapping,
    const std::vector<std::string>& block_prefixes) {
  std::vector<StreamedBlock> blocks;
  std::map<std::string, std::size_t> block_of_source;  // stored name -> block
  for (std::size_t b = 0; b < block_prefixes.size(); ++b) {
    const std::string& prefix = block_prefixes[b];
    StreamedBlock block;
    std::set<std::string> taken;
    const auto add = [&](const StoredTensor& stored) {
      const auto [it, first] = block_of_source.emplace(stored.name, b);
      if (!first && it->second != b)
        throw InvalidArgument(fmt::format(
            "stored tensor '{}' makes parameters of blocks '{}' and '{}': "
            "they cannot be streamed one at a time",
            stored.name, block_prefixes[it->second], prefix));
      if (taken.insert(stored.name).second)
        block.ranges.push_back(range_of(listing, stored));
    };
    for (const TensorRecipe& recipe : mapping.recipes) {
      if (!starts_with(recipe.target, prefix)) continue;
      for (const std::string& source : recipe.sources) {
        const StoredTensor* stored = listing.find(source);
        if (!stored)
          throw Error(
              fmt::format("{}: no tensor '{}' (the layout makes '{}' "
                          "from it)",
                          listing.describe(), source, recipe.target));
        add(*stored);
        if (const StoredTensor* scale = listing.scale_of(*stored)) add(*scale);
      }
    }
    if (block.ranges.empty())
      throw InvalidArgument(fmt::format(
          "no parameter of the {} layout starts with '{}': not a block of "
          "this component",
          mapping.layout, prefix));
    blocks.push_back(std::move(block));
  }
  return blocks;
}

}  // namespace mold

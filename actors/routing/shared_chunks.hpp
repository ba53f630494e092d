// An immutable list whose versions share storage, for the fan-out list of a
// route.
//
// A topic's route is shared by every session that caches it, so a change
// makes a new version instead of editing in place. Copying a flat vector per
// change made each subscribe cost O(subscribers) (20,000 subscribes to one
// topic were quadratic). Here the elements live in chunks of at most
// `chunk_capacity`, each shared between versions: adding copies the chunk
// pointers (n / 32 reference counts) and the last chunk, removing copies the
// chunks that lose an element. The element order is the order of addition.

#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>
#include <vector>

namespace tb {

/// An immutable list of `T` in shared chunks: `with` and `without` return
/// new versions that share every chunk they do not change.
template <class T>
class shared_chunks {
public:
  /// The most elements in one chunk.
  static constexpr std::size_t chunk_capacity = 32;

  /// One chunk of elements, never modified once shared.
  using chunk = std::vector<T>;

  /// Iterates over the elements, chunk by chunk.
  class const_iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    /// Points at element `index` of chunk `at` in `chunks`.
    const_iterator(const std::vector<std::shared_ptr<const chunk>>* chunks,
                   std::size_t at, std::size_t index)
        : chunks_(chunks), at_(at), index_(index) {}

    /// The element.
    reference operator*() const {
      return (*(*chunks_)[at_])[index_];
    }

    /// The element.
    pointer operator->() const {
      return &**this;
    }

    /// Advances to the next element.
    const_iterator& operator++() {
      if (++index_ == (*chunks_)[at_]->size()) {
        ++at_;
        index_ = 0;
      }
      return *this;
    }

    /// Iterators are equal when they point at the same element.
    friend bool operator==(const const_iterator& x, const const_iterator& y) {
      return x.at_ == y.at_ && x.index_ == y.index_;
    }

    /// Iterators are equal when they point at the same element.
    friend bool operator!=(const const_iterator& x, const const_iterator& y) {
      return !(x == y);
    }

  private:
    const std::vector<std::shared_ptr<const chunk>>* chunks_;
    std::size_t at_;
    std::size_t index_;
  };

  /// Returns the number of elements.
  std::size_t size() const noexcept {
    return size_;
  }

  /// Returns true if the list holds nothing.
  bool empty() const noexcept {
    return size_ == 0;
  }

  /// Returns the number of chunks (for tests and memory accounting).
  std::size_t chunk_count() const noexcept {
    return chunks_.size();
  }

  /// The first element.
  const_iterator begin() const {
    return {&chunks_, 0, 0};
  }

  /// Past the last element.
  const_iterator end() const {
    return {&chunks_, chunks_.size(), 0};
  }

  /// Returns a version with `x` appended: copies the chunk pointers and the
  /// last chunk only.
  shared_chunks with(T x) const {
    shared_chunks result = *this;
    auto& chunks = result.chunks_;
    if (chunks.empty() || chunks.back()->size() >= chunk_capacity) {
      auto fresh = std::make_shared<chunk>();
      fresh->reserve(4);
      fresh->push_back(std::move(x));
      chunks.push_back(std::move(fresh));
    } else {
      auto grown = std::make_shared<chunk>(*chunks.back());
      grown->push_back(std::move(x));
      chunks.back() = std::move(grown);
    }
    ++result.size_;
    return result;
  }

  /// Returns a version without the elements `drop` selects: copies the
  /// chunk pointers and the chunks that lose an element; chunks left empty
  /// disappear. Sets `removed` to the number of elements dropped.
  template <class Predicate>
  shared_chunks without(Predicate drop, std::size_t& removed) const {
    removed = 0;
    shared_chunks result;
    result.chunks_.reserve(chunks_.size());
    for (auto& part : chunks_) {
      std::size_t hits = 0;
      for (auto& x : *part)
        hits += drop(x) ? 1 : 0;
      if (hits == 0) {
        result.chunks_.push_back(part);
        continue;
      }
      removed += hits;
      if (hits == part->size())
        continue;
      auto kept = std::make_shared<chunk>();
      kept->reserve(part->size() - hits);
      for (auto& x : *part)
        if (!drop(x))
          kept->push_back(x);
      result.chunks_.push_back(std::move(kept));
    }
    result.size_ = size_ - removed;
    return result;
  }

  /// Returns the elements as one vector.
  std::vector<T> to_vector() const {
    return std::vector<T>(begin(), end());
  }

  /// Builds a list from `xs`, in order.
  static shared_chunks from_vector(std::vector<T> xs) {
    shared_chunks result;
    for (std::size_t i = 0; i < xs.size(); i += chunk_capacity) {
      auto last = std::min(xs.size(), i + chunk_capacity);
      result.chunks_.push_back(
          std::make_shared<chunk>(std::make_move_iterator(xs.begin() + i),
                                  std::make_move_iterator(xs.begin() + last)));
    }
    result.size_ = xs.size();
    return result;
  }

private:
  std::vector<std::shared_ptr<const chunk>> chunks_;
  std::size_t size_ = 0;
};

} // namespace tb

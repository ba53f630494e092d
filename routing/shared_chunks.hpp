// An immutable list whose versions share storage, for the fan-out list of a
// route.
//
// A topic's route is shared by every session that caches it, so a change
// makes a new version instead of editing in place. Copying a flat vector per
// change made each subscribe cost O(subscribers) (20,000 subscribes to one
// topic were quadratic). Here the elements live in chunks of at most
// `chunk_capacity`, the chunks in segments of at most `segment_capacity`,
// each shared between versions: adding copies the segment pointers (n /
// 1,024 reference counts), the last segment (at most 32) and the last chunk;
// removing copies the segments and chunks that lose an element. With one
// level only (chunk pointers, n / 32 each), 20,000 subscribes to one topic
// still cost twice as much at the end as at the start. The element order is
// the order of addition.

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

  /// The most chunks in one segment.
  static constexpr std::size_t segment_capacity = 32;

  /// One chunk of elements, never modified once shared.
  using chunk = std::vector<T>;

  /// One segment of chunks, never modified once shared.
  using segment = std::vector<std::shared_ptr<const chunk>>;

  /// The segments of one version.
  using segments = std::vector<std::shared_ptr<const segment>>;

  /// Iterates over the elements, chunk by chunk.
  class const_iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = const T*;
    using reference = const T&;

    /// Points at element `index` of chunk `at` of segment `seg` in `parts`.
    const_iterator(const segments* parts, std::size_t seg, std::size_t at,
                   std::size_t index)
        : parts_(parts), seg_(seg), at_(at), index_(index) {}

    /// The element.
    reference operator*() const {
      return (*(*(*parts_)[seg_])[at_])[index_];
    }

    /// The element.
    pointer operator->() const {
      return &**this;
    }

    /// Advances to the next element.
    const_iterator& operator++() {
      auto& part = *(*parts_)[seg_];
      if (++index_ < part[at_]->size())
        return *this;
      index_ = 0;
      if (++at_ < part.size())
        return *this;
      at_ = 0;
      ++seg_;
      return *this;
    }

    /// Iterators are equal when they point at the same element.
    friend bool operator==(const const_iterator& x, const const_iterator& y) {
      return x.seg_ == y.seg_ && x.at_ == y.at_ && x.index_ == y.index_;
    }

    /// Iterators are equal when they point at the same element.
    friend bool operator!=(const const_iterator& x, const const_iterator& y) {
      return !(x == y);
    }

  private:
    const segments* parts_;
    std::size_t seg_;
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
    std::size_t result = 0;
    for (auto& part : parts_)
      result += part->size();
    return result;
  }

  /// Returns the number of segments (for tests).
  std::size_t segment_count() const noexcept {
    return parts_.size();
  }

  /// The first element.
  const_iterator begin() const {
    return {&parts_, 0, 0, 0};
  }

  /// Past the last element.
  const_iterator end() const {
    return {&parts_, parts_.size(), 0, 0};
  }

  /// Returns a version with `x` appended: copies the segment pointers, the
  /// last segment and the last chunk only.
  shared_chunks with(T x) const {
    std::vector<T> xs;
    xs.push_back(std::move(x));
    return with_all(std::move(xs));
  }

  /// Returns a version with `xs` appended in order, at the cost of one
  /// `with` plus the new elements.
  shared_chunks with_all(std::vector<T> xs) const {
    shared_chunks result = *this;
    if (xs.empty())
      return result;
    result.size_ += xs.size();
    auto& parts = result.parts_;
    // The last segment, if it has room, is copied and continued.
    std::shared_ptr<segment> tail;
    if (!parts.empty() && !full(*parts.back())) {
      tail = std::make_shared<segment>(*parts.back());
      parts.pop_back();
    } else {
      tail = std::make_shared<segment>();
    }
    auto next = xs.begin();
    while (next != xs.end()) {
      auto left = static_cast<std::size_t>(xs.end() - next);
      auto grown = std::make_shared<chunk>();
      if (tail->empty() || tail->back()->size() == chunk_capacity) {
        if (tail->size() == segment_capacity) {
          parts.push_back(std::move(tail));
          tail = std::make_shared<segment>();
        }
        grown->reserve(std::min(chunk_capacity, left));
        tail->emplace_back();
      } else {
        auto& old = *tail->back();
        grown->reserve(std::min(chunk_capacity, old.size() + left));
        grown->insert(grown->end(), old.begin(), old.end());
      }
      auto n = static_cast<std::ptrdiff_t>(
          std::min(chunk_capacity - grown->size(), left));
      grown->insert(grown->end(), std::make_move_iterator(next),
                    std::make_move_iterator(next + n));
      next += n;
      tail->back() = std::move(grown);
    }
    parts.push_back(std::move(tail));
    return result;
  }

  /// Returns a version without the elements `drop` selects: copies the
  /// segment pointers and the segments and chunks that lose an element;
  /// chunks and segments left empty disappear. Sets `removed` to the number
  /// of elements dropped.
  template <class Predicate>
  shared_chunks without(Predicate drop, std::size_t& removed) const {
    removed = 0;
    shared_chunks result;
    result.parts_.reserve(parts_.size());
    for (auto& part : parts_) {
      std::shared_ptr<segment> changed;
      for (std::size_t k = 0; k < part->size(); ++k) {
        auto& piece = (*part)[k];
        std::size_t hits = 0;
        for (auto& x : *piece)
          hits += drop(x) ? 1 : 0;
        if (hits == 0) {
          if (changed)
            changed->push_back(piece);
          continue;
        }
        if (!changed)
          changed = std::make_shared<segment>(
              part->begin(), part->begin() + static_cast<std::ptrdiff_t>(k));
        removed += hits;
        if (hits == piece->size())
          continue;
        auto kept = std::make_shared<chunk>();
        kept->reserve(piece->size() - hits);
        for (auto& x : *piece)
          if (!drop(x))
            kept->push_back(x);
        changed->push_back(std::move(kept));
      }
      if (!changed)
        result.parts_.push_back(part);
      else if (!changed->empty())
        result.parts_.push_back(std::move(changed));
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
    return shared_chunks{}.with_all(std::move(xs));
  }

private:
  // Returns true if no element fits into `part` without a new segment.
  static bool full(const segment& part) {
    return part.size() == segment_capacity &&
           part.back()->size() >= chunk_capacity;
  }

  segments parts_;
  std::size_t size_ = 0;
};

} // namespace tb

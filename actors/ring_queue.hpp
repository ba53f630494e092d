// A FIFO queue in one growable ring of slots, for the queues every session
// has: std::deque allocates a 512-byte block and its map (576 bytes) when
// it is constructed, used or not, which an idle session paid four times.
// This queue allocates nothing until the first push, and gives a large ring
// back when it empties (docs/performance.md, "Memory per session").
//
//   push_back: [h . . .] -> [h x . .]   (the ring doubles when full)
//   pop_front: [. h x .]                (empty: storage above
//                                        `keep_capacity` slots is freed)

#pragma once

#include <algorithm>
#include <cstddef>
#include <iterator>
#include <memory>
#include <utility>

namespace tb {

/// A FIFO queue of `T` in a ring that grows by doubling; empty and never
/// used, it holds no memory.
template <class T>
class ring_queue {
public:
  /// The capacity of the first ring.
  static constexpr std::size_t first_capacity = 4;

  /// A ring larger than this many slots is freed when the queue empties.
  static constexpr std::size_t keep_capacity = 1024;

  /// Iterates from the front to the back.
  template <class Queue, class Ref>
  class basic_iterator {
  public:
    using iterator_category = std::forward_iterator_tag;
    using value_type = T;
    using difference_type = std::ptrdiff_t;
    using pointer = std::remove_reference_t<Ref>*;
    using reference = Ref;

    /// Points at position `pos` (0 = front) of `queue`.
    basic_iterator(Queue* queue, std::size_t pos) : queue_(queue), pos_(pos) {}

    /// Returns the element.
    reference operator*() const {
      return (*queue_)[pos_];
    }

    /// Returns a pointer to the element.
    pointer operator->() const {
      return &(*queue_)[pos_];
    }

    /// Moves to the next element.
    basic_iterator& operator++() {
      ++pos_;
      return *this;
    }

    /// Returns true if both point at the same position.
    friend bool operator==(const basic_iterator& x, const basic_iterator& y) {
      return x.pos_ == y.pos_;
    }

    /// Returns true unless both point at the same position.
    friend bool operator!=(const basic_iterator& x, const basic_iterator& y) {
      return x.pos_ != y.pos_;
    }

  private:
    Queue* queue_;
    std::size_t pos_;
  };

  /// A mutable iterator.
  using iterator = basic_iterator<ring_queue, T&>;

  /// A const iterator.
  using const_iterator = basic_iterator<const ring_queue, const T&>;

  /// Creates an empty queue without storage.
  ring_queue() noexcept = default;

  /// Takes the elements of `other`, which is left empty.
  ring_queue(ring_queue&& other) noexcept
      : slots_(std::exchange(other.slots_, nullptr)),
        capacity_(std::exchange(other.capacity_, 0)),
        head_(std::exchange(other.head_, 0)),
        size_(std::exchange(other.size_, 0)) {}

  /// Takes the elements of `other`, which is left empty.
  ring_queue& operator=(ring_queue&& other) noexcept {
    if (this != &other) {
      release();
      slots_ = std::exchange(other.slots_, nullptr);
      capacity_ = std::exchange(other.capacity_, 0);
      head_ = std::exchange(other.head_, 0);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }

  ring_queue(const ring_queue&) = delete;
  ring_queue& operator=(const ring_queue&) = delete;

  /// Destroys the elements and frees the ring.
  ~ring_queue() {
    release();
  }

  /// Returns true if the queue holds nothing.
  bool empty() const noexcept {
    return size_ == 0;
  }

  /// Returns the number of elements.
  std::size_t size() const noexcept {
    return size_;
  }

  /// Returns the number of slots of the ring (0 without storage).
  std::size_t capacity() const noexcept {
    return capacity_;
  }

  /// Returns the element at `pos` (0 = front).
  T& operator[](std::size_t pos) noexcept {
    return slots_[(head_ + pos) & (capacity_ - 1)];
  }

  /// Returns the element at `pos` (0 = front).
  const T& operator[](std::size_t pos) const noexcept {
    return slots_[(head_ + pos) & (capacity_ - 1)];
  }

  /// Returns the oldest element; the queue must not be empty.
  T& front() noexcept {
    return slots_[head_];
  }

  /// Returns the oldest element; the queue must not be empty.
  const T& front() const noexcept {
    return slots_[head_];
  }

  /// Returns the newest element; the queue must not be empty.
  T& back() noexcept {
    return (*this)[size_ - 1];
  }

  /// Appends an element made from `xs`.
  template <class... Ts>
  T& emplace_back(Ts&&... xs) {
    if (size_ == capacity_)
      grow();
    auto* slot = slots_ + ((head_ + size_) & (capacity_ - 1));
    ::new (static_cast<void*>(slot)) T(std::forward<Ts>(xs)...);
    ++size_;
    return *slot;
  }

  /// Appends `x`.
  void push_back(const T& x) {
    emplace_back(x);
  }

  /// Appends `x`.
  void push_back(T&& x) {
    emplace_back(std::move(x));
  }

  /// Removes the oldest element; the queue must not be empty.
  void pop_front() {
    slots_[head_].~T();
    head_ = (head_ + 1) & (capacity_ - 1);
    if (--size_ == 0)
      emptied();
  }

  /// Removes the first element equal to `x`, keeping the order of the
  /// others; returns false if there is none.
  bool erase_first(const T& x) {
    std::size_t pos = 0;
    while (pos < size_ && !((*this)[pos] == x))
      ++pos;
    if (pos == size_)
      return false;
    for (; pos + 1 < size_; ++pos)
      (*this)[pos] = std::move((*this)[pos + 1]);
    (*this)[size_ - 1].~T();
    if (--size_ == 0)
      emptied();
    return true;
  }

  /// Removes every element and frees the ring.
  void clear() noexcept {
    release();
  }

  /// Returns an iterator to the front.
  iterator begin() noexcept {
    return {this, 0};
  }

  /// Returns an iterator past the back.
  iterator end() noexcept {
    return {this, size_};
  }

  /// Returns an iterator to the front.
  const_iterator begin() const noexcept {
    return {this, 0};
  }

  /// Returns an iterator past the back.
  const_iterator end() const noexcept {
    return {this, size_};
  }

private:
  void grow() {
    auto capacity = std::max(first_capacity, capacity_ * 2);
    auto* slots = std::allocator<T>{}.allocate(capacity);
    for (std::size_t i = 0; i < size_; ++i) {
      ::new (static_cast<void*>(slots + i)) T(std::move((*this)[i]));
      (*this)[i].~T();
    }
    if (slots_ != nullptr)
      std::allocator<T>{}.deallocate(slots_, capacity_);
    slots_ = slots;
    capacity_ = capacity;
    head_ = 0;
  }

  void emptied() noexcept {
    head_ = 0;
    if (capacity_ > keep_capacity)
      release();
  }

  void release() noexcept {
    for (std::size_t i = 0; i < size_; ++i)
      (*this)[i].~T();
    if (slots_ != nullptr)
      std::allocator<T>{}.deallocate(slots_, capacity_);
    slots_ = nullptr;
    capacity_ = 0;
    head_ = 0;
    size_ = 0;
  }

  T* slots_ = nullptr;
  std::size_t capacity_ = 0;
  std::size_t head_ = 0;
  std::size_t size_ = 0;
};

} // namespace tb

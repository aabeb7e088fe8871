// The depth walk of the internal trees (keys in every node): each node reachable from the
// entry node with the number of nodes a search reads to reach it. Quiescent only (plain
// acquire loads, no hot path); an explicit stack, since a tree of keys inserted in order is a
// path as long as the tree is large.
#pragma once

#include <array>
#include <cstddef>
#include <utility>
#include <vector>

namespace cdsb::detail {

// fn(node, depth) for every node under `entry`, `entry` at depth 1, parents before children;
// children(node) returns the node's two children (nullptr where there is none).
template <class Node, class Children, class Fn>
void visit_with_depth(Node* entry, Children&& children, Fn&& fn) {
  std::vector<std::pair<Node*, std::size_t>> stack{{entry, 1}};
  while (!stack.empty()) {
    const auto [n, depth] = stack.back();
    stack.pop_back();
    const std::array<Node*, 2> c = children(n);
    for (Node* child : c)
      if (child) stack.push_back({child, depth + 1});
    fn(n, depth);
  }
}

}  // namespace cdsb::detail

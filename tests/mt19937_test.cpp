// Mt19937 against std::mt19937, and the bulk fills (bernoulli, uniform) against the one-number-
// at-a-time definitions of random.hpp: the same numbers, the same state text, bit for bit.
#include <xtgrad/random/mt19937.hpp>
#include <xtgrad/random/random.hpp>
#include <xtgrad/threads/parallel.hpp>
#include "tests/test_util.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <sstream>
#include <string>
#include <vector>

TEST_SUITE_BEGIN("engine");

using namespace xtgrad;

namespace {

template <class Engine>
std::string text_of(const Engine& e) {
    std::ostringstream out;
    out << e;
    return out.str();
}

}  // namespace

TEST_CASE("mt19937: the same numbers as std::mt19937, one at a time and in bulk, across twists") {
    for (std::uint32_t seed : {0u, 1u, 5489u, 0xFFFFFFFFu}) {
        std::mt19937 ref(seed);
        Mt19937 one(seed), bulk(seed);
        // Runs that start and end inside a 624-word block and span several twists.
        for (std::size_t n : {1u, 5u, 623u, 624u, 625u, 1000u, 3000u, 0u, 7u}) {
            std::vector<std::uint32_t> want(n), got(n);
            for (auto& w : want) w = ref();
            bulk.generate(got.data(), n);
            bool same = true;
            for (std::size_t i = 0; i < n; ++i) same = same && got[i] == want[i] && one() == want[i];
            INFO("seed ", seed, ", run of ", n);
            CHECK(same);
        }
        CHECK(text_of(bulk) == text_of(ref));
        CHECK(one == bulk);
    }
}

TEST_CASE("mt19937: the state text is std::mt19937's, both ways; discard skips as calls would") {
    std::mt19937 ref(42);
    ref.discard(1000);
    Mt19937 e;
    std::istringstream in(text_of(ref));
    in >> e;
    REQUIRE(!in.fail());
    CHECK(e() == ref());

    std::mt19937 back;
    std::istringstream again(text_of(e));
    again >> back;
    CHECK(back() == e());

    Mt19937 skipped(7), stepped(7);
    skipped.discard(1500);
    for (int i = 0; i < 1500; ++i) (void)stepped();
    CHECK(skipped == stepped);

    Mt19937 untouched(3), bad(3);
    std::istringstream garbage("1 2 3");
    garbage >> bad;
    CHECK(garbage.fail());
    CHECK(bad == untouched);  // a failed read leaves the engine as it was
}

TEST_CASE("mt19937: bulk bernoulli and uniform equal their one-number definitions") {
    for (double p : {0.0, 1e-17, 0.1, 0.5, 0.9, 1.0 - 1e-16, 1.0}) {
        Generator bulk(11), single(11);
        const std::size_t n = 5000;  // several bulk chunks and a partial one
        std::vector<std::uint8_t> got(n);
        fill_bernoulli(got.data(), n, p, bulk);
        std::size_t mismatches = 0;
        for (std::size_t i = 0; i < n; ++i) mismatches += got[i] != (single.uniform_double() < p ? 1 : 0);
        INFO("p = ", p);
        CHECK(mismatches == 0);
        CHECK(bulk.random() == single.random());  // the same number of draws
    }
    Generator bulk(5), single(5);
    std::vector<float> got(9000);
    fill_uniform(got.data(), got.size(), -0.25, 0.75, bulk);
    std::size_t mismatches = 0;
    for (float v : got) mismatches += v != single.uniform(-0.25f, 0.75f);
    CHECK(mismatches == 0);
    CHECK(bulk.random() == single.random());
}

TEST_CASE("mt19937: bernoulli split over threads draws the one stream's mask and leaves the engine where one thread would") {
    // above the split's threshold, odd sizes (parts of unequal length), 2 and 3 threads
    for (std::size_t n : {std::size_t{70001}, std::size_t{200003}}) {
        Generator one(21);
        std::vector<std::uint8_t> want(n);
        fill_bernoulli(want.data(), n, 0.9, one);
        for (int threads : {2, 3}) {
            CAPTURE(n);
            CAPTURE(threads);
            set_num_threads(threads);
            Generator split(21);
            std::vector<std::uint8_t> got(n);
            fill_bernoulli(got.data(), n, 0.9, split);
            set_num_threads(1);
            CHECK(got == want);
            CHECK(split.engine() == one.engine());  // the same draws consumed
        }
    }
}

TEST_CASE("mt19937: the engine serves std:: algorithms as a UniformRandomBitGenerator") {
    Generator g(1);
    std::mt19937 ref(1);
    std::vector<int> a{1, 2, 3, 4, 5, 6, 7, 8}, b = a;
    std::shuffle(a.begin(), a.end(), g.engine());
    std::shuffle(b.begin(), b.end(), ref);
    CHECK(a == b);
    static_assert(Mt19937::min() == std::mt19937::min() && Mt19937::max() == std::mt19937::max());
}

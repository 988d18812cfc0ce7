// The training run the run-checkpoint fuzz target loads into, and the seed writer's files come
// from: a small model, Adam, a warm-up schedule and a named generator, trained two steps.
#pragma once

#include <xtgrad/nn/checkpoint.hpp>
#include <xtgrad/nn/layers.hpp>
#include <xtgrad/optim/schedule.hpp>

#include <memory>

namespace xtgrad::fuzz {

struct Net : nn::Module {
    std::shared_ptr<nn::Linear> fc1 = register_module("fc1", std::make_shared<nn::Linear>(3, 4));
    std::shared_ptr<nn::Linear> fc2 = register_module("fc2", std::make_shared<nn::Linear>(4, 2));
};

struct TrainedRun {
    // First: the same initial weights every time a run is made.
    struct Seeded {
        Seeded() { manual_seed(0); }
    } seeded;
    Generator gen{5};
    Net net;
    optim::Adam opt{net.parameters(), optim::AdamOptions(0.01)};
    optim::LRScheduler schedule{opt, optim::linear_warmup(0.01, 3)};
    nn::RunState state{.optimizer = &opt, .schedule = &schedule, .generators = {{"data", &gen}}};
    TrainedRun() {
        for (int step = 0; step < 2; ++step) {
            schedule.step();
            opt.zero_grad();
            sum(net.fc2->forward(relu(net.fc1->forward(randn({4, 3}, gen))))).backward();
            opt.step();
        }
        state.epoch = 2;
    }
};

}  // namespace xtgrad::fuzz

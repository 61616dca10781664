import numpy as np

from faircert.demo import accuracy, lending_data, train_relu_network


def test_demo_data_and_training_are_deterministic():
    a, b = lending_data(seed=0), lending_data(seed=0)
    np.testing.assert_array_equal(a.X, b.X)
    assert a.domain.contains(a.X).all()
    net1 = train_relu_network(a.X, a.y, epochs=200)
    net2 = train_relu_network(b.X, b.y, epochs=200)
    for w1, w2 in zip(net1.weights, net2.weights):
        np.testing.assert_array_equal(w1, w2)
    assert accuracy(net1, a.X, a.y) > 0.85


def test_demo_network_depends_on_the_planted_attribute():
    data = lending_data(seed=0)
    net = train_relu_network(data.X, data.y)
    flipped = data.X.copy()
    flipped[:, 4] = 1 - flipped[:, 4]
    flip_rate = np.mean(net.predict(flipped) != net.predict(data.X))
    assert 0.02 < flip_rate < 0.4

set terminal svg size 1000,800 dynamic font 'sans,11'
set output 'docs/loadgen-memcached.svg'
set multiplot layout 2,1 title "gphkv-loadgen: memcached, open loop, 2 threads, best rate under p99 1000us"
set grid
set key outside right top
set xlabel 'seconds since start (warm-up excluded)'
set ylabel 'per second'
set format y '%.1s%c'
set yrange [0:*]
plot 'docs/loadgen-memcached.svg.dat' using 1:3 with linespoints lw 2 title 'keys/s', '' using 1:2 with linespoints lw 2 title 'calls/s'
set ylabel 'latency (us)'
set logscale y
set format y '%g'
set yrange [*:*]
plot 'docs/loadgen-memcached.svg.dat' using 1:4 with lines lw 2 title 'p50', '' using 1:5 with lines lw 2 title 'p90', '' using 1:6 with lines lw 2 title 'p99', '' using 1:7 with lines lw 2 title 'p99.9', '' using 1:8 with lines lw 1 dt 2 title 'max'
unset multiplot

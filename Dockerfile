# The operator's image: a static binary on distroless, running as nonroot.
# `make docker-image` builds it; `make image` builds the same without Docker. The go build command is the Makefile's GO_BUILD (a
# test keeps the two the same), and GO_VERSION is go.mod's go version.
ARG GO_VERSION=1.26.8

# The build stage runs on the builder's platform and cross-compiles for the
# target one, which is faster than emulating it.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
ARG TARGETOS
ARG TARGETARCH
ENV GOOS=$TARGETOS GOARCH=$TARGETARCH
WORKDIR /src
# The modules first, in a layer of their own that a code change leaves cached.
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY pkg/ pkg/
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/lin-operator ./cmd/operator

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/lin-operator /lin-operator
# distroless' nonroot user, by number, so that runAsNonRoot can check it.
USER 65532:65532
ENTRYPOINT ["/lin-operator"]
